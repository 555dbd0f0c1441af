import CYYCache
import Dispatch
import Synchronization

#if canImport(FoundationEssentials)
    import FoundationEssentials
#else
    import Foundation
#endif

/// The context object of a ``MemoryCache``'s C callbacks (`yyc_value_callbacks.ctx`,
/// `yyc_inline_value_type.ctx` and the event handlers' `ctx`). Non-generic, because a
/// `@convention(c)` function cannot mention the cache's generic parameters;
/// ``MemoryCacheEvents`` overrides the event methods.
///
/// It outlives the C cache: the C cache holds a strong reference to it, dropped by the cache's
/// free handler once the C cache is gone. That is after `yyc_memcache_free` returns when a value
/// released by the cache held the last reference to the ``MemoryCache``: the C core then defers
/// the free to the end of the call that released the value, and keeps calling back until then.
@usableFromInline
class MemoryCacheCallbacks: @unchecked Sendable {
    // @unchecked Sendable: the only state is an Atomic here and, in the subclass, a reference
    // written once before the C cache can call back.

    /// `MemoryCache.releasesValuesOnMainThread`, read by the release callback on any thread.
    let releasesOnMainThread = Atomic<Bool>(false)

    /// Whether values are released only in the cache's callers' calls (the cache was created
    /// without knowing that `Value` is `Sendable`): the release and destroy callbacks then hand
    /// every value back (``handedBack``) instead of releasing it, and the cache releases them
    /// when its call (or the next one, for the background worker's evictions) returns.
    let releasesOnCallersOnly: Atomic<Bool>

    /// Values handed back by the callbacks, waiting for a caller: object pointers (pointer
    /// caches) or heap cells holding an inline value's bytes (inline caches), as integers.
    /// Only moved here, never retained, copied or destroyed: the bytes of an inline value are
    /// moved with `memcpy`, which is a valid move because inline values are bitwise takable.
    let handedBack = Protected<[UInt]>([])
    /// Whether ``handedBack`` may be non-empty; set under its lock, read without it.
    @usableFromInline
    let handedBackFlag = Atomic<Bool>(false)

    /// Inline values: the value type's copy and destroy (``MemoryCacheInlineOps/none`` otherwise).
    let inlineOps: MemoryCacheInlineOps
    /// Whether the C cache stores inline values (else pointers: objects or boxes), and the
    /// size and alignment of an inline value's bytes there.
    let storesInline: Bool
    let inlineSize: Int
    let inlineAlignment: Int

    init(
        inlineOps: MemoryCacheInlineOps, storesInline: Bool, inlineSize: Int, inlineAlignment: Int,
        releasesOnCallersOnly: Bool
    ) {
        self.inlineOps = inlineOps
        self.storesInline = storesInline
        self.inlineSize = inlineSize
        self.inlineAlignment = inlineAlignment
        self.releasesOnCallersOnly = Atomic(releasesOnCallersOnly)
    }

    /// Whether values were handed back since the last ``releaseHandedBackValues()``.
    @inlinable
    final var hasHandedBackValues: Bool { handedBackFlag.load(ordering: .acquiring) }

    /// Keeps `bits` (a value the C core dropped) for a caller to release. Any thread.
    final func handBack(_ bits: UInt) {
        handedBack.withLock {
            $0.append(bits)
            handedBackFlag.store(true, ordering: .releasing)
        }
    }

    /// Releases every handed-back value on the calling thread (which runs a call of the cache,
    /// or its deinit), with no lock held: a value's deinit may call back into the cache.
    @usableFromInline
    final func releaseHandedBackValues() {
        let values = handedBack.withLock { values -> [UInt] in
            handedBackFlag.store(false, ordering: .relaxed)
            defer { values = [] }
            return values
        }
        for bits in values {
            let pointer = UnsafeMutableRawPointer(bitPattern: bits)!
            if storesInline {
                inlineOps.destroy(pointer)
                pointer.deallocate()
            } else {
                Unmanaged<AnyObject>.fromOpaque(pointer).release()
            }
        }
    }

    /// Called by the C core's memory-warning hook, on the thread of `handleMemoryWarning()`.
    func memoryWarning() {}

    /// Called by the C core's enter-background hook, on the thread of `handleEnterBackground()`.
    func enterBackground() {}

    /// Called by the C core's removal listener for each entry that left (after it left, with no
    /// lock held, on the releasing thread): `key` and `value` are borrowed for the call (`value`
    /// is the stored object, or the address of an inline value's bytes).
    func removed(key: UnsafeRawBufferPointer, value: UnsafeMutableRawPointer, cause: yyc_removal_cause) {}

    /// Installs (or, with `false`, removes) the C removal listener on `handle`, with `self` as
    /// its context (not retained: the C cache keeps `self` alive until it is freed).
    func listenForRemovals(on handle: OpaquePointer, _ listen: Bool) {
        yyc_memcache_set_removal_listener(
            handle, listen ? memoryCacheRemoved : nil, Unmanaged.passUnretained(self).toOpaque())
    }

    /// The value callbacks for `yyc_memcache_new`, with `self` as their context (not retained).
    func valueCallbacks() -> yyc_value_callbacks {
        yyc_value_callbacks(
            retain: memoryCacheRetainValue,
            release: memoryCacheReleaseValue,
            ctx: Unmanaged.passUnretained(self).toOpaque())
    }

    /// The inline value type for `yyc_memcache_new_inline`, with `self` as its context (not
    /// retained): no callbacks for trivial values, else copy and destroy through this object,
    /// or copy with `directCopy` (see `memoryCacheDirectCopy(for:)`) when there is one.
    func inlineValueType(
        size: Int, alignment: Int, trivial: Bool, directCopy: MemoryCacheCopyFunction?
    ) -> yyc_inline_value_type {
        yyc_inline_value_type(
            size: size, align: alignment,
            copy: trivial ? nil : (directCopy ?? memoryCacheCopyValue),
            destroy: trivial ? nil : memoryCacheDestroyValue,
            ctx: Unmanaged.passUnretained(self).toOpaque())
    }

    /// Ends the life of the inline value at `value` (the destroy callback; never under the
    /// lock). The C core frees the bytes when this returns, so a value bound for the main queue
    /// moves to a heap cell first; the cell travels as an integer (no other thread touches it
    /// after this hop).
    final func destroyInlineValue(_ value: UnsafeMutableRawPointer) {
        if releasesOnCallersOnly.load(ordering: .relaxed) {
            // A move by memcpy (inline values are bitwise takable): no code of the value runs.
            let cell = UnsafeMutableRawPointer.allocate(byteCount: inlineSize, alignment: inlineAlignment)
            cell.copyMemory(from: value, byteCount: inlineSize)
            handBack(UInt(bitPattern: cell))
        } else if releasesOnMainThread.load(ordering: .relaxed) && !MainQueue.isCurrent {
            let ops = inlineOps
            let bits = UInt(bitPattern: ops.moveToHeap(value))
            DispatchQueue.main.async { ops.destroyHeap(UnsafeMutableRawPointer(bitPattern: bits)!) }
        } else {
            inlineOps.destroy(value)
        }
    }

    /// Makes `handle` keep `self` alive until it is freed (its free handler releases it).
    func retainUntilFreed(by handle: OpaquePointer) {
        yyc_memcache_set_free_handler(
            handle, memoryCacheFreed, Unmanaged.passRetained(self).toOpaque())
    }

    /// Installs the event hooks on `handle`, with `self` as their context (not retained).
    func installEventHandlers(on handle: OpaquePointer) {
        let ctx = Unmanaged.passUnretained(self).toOpaque()
        yyc_memcache_set_memory_warning_handler(handle, memoryCacheMemoryWarning, ctx)
        yyc_memcache_set_enter_background_handler(handle, memoryCacheEnterBackground, ctx)
    }
}

// The retain callback runs under the C cache's mutex: it only increments the box's reference
// count (it must be cheap and must not call into the cache).
private func memoryCacheRetainValue(
    _ ctx: UnsafeMutableRawPointer?, _ value: UnsafeMutableRawPointer?
) -> UnsafeMutableRawPointer? {
    if let value { _ = Unmanaged<AnyObject>.fromOpaque(value).retain() }
    return value
}

// The release callback never runs under the mutex: the value's deinit may use the cache.
private func memoryCacheReleaseValue(_ ctx: UnsafeMutableRawPointer?, _ value: UnsafeMutableRawPointer?) {
    guard let ctx, let value else { return }
    // A guaranteed reference: no retain/release pair on the callbacks object per released value
    // (the cache keeps it alive while the C core can call back).
    let callbacks = Unmanaged<MemoryCacheCallbacks>.fromOpaque(ctx)
    let (callersOnly, onMain) = callbacks._withUnsafeGuaranteedRef {
        ($0.releasesOnCallersOnly.load(ordering: .relaxed), $0.releasesOnMainThread.load(ordering: .relaxed))
    }
    if callersOnly {
        // Not even a release here: this may be the background worker.
        callbacks._withUnsafeGuaranteedRef { $0.handBack(UInt(bitPattern: value)) }
    } else if onMain && !MainQueue.isCurrent {
        // The pointer travels as an integer: the box is not Sendable, but after this hop no
        // other thread touches it (the cache has already dropped it).
        let bits = UInt(bitPattern: value)
        DispatchQueue.main.async {
            Unmanaged<AnyObject>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).release()
        }
    } else {
        Unmanaged<AnyObject>.fromOpaque(value).release()
    }
}

// The copy callback runs under the C cache's mutex: it copies the value (retaining what it
// holds) and does not call into the cache. The C core never passes NULL.
private func memoryCacheCopyValue(
    _ ctx: UnsafeMutableRawPointer?, _ dst: UnsafeMutableRawPointer?, _ src: UnsafeRawPointer?
) {
    Unmanaged<MemoryCacheCallbacks>.fromOpaque(ctx.unsafelyUnwrapped)._withUnsafeGuaranteedRef {
        $0.inlineOps.copy(dst.unsafelyUnwrapped, src.unsafelyUnwrapped)
    }
}

// The destroy callback never runs under the mutex: the value's deinit may use the cache. The C
// core never passes NULL.
private func memoryCacheDestroyValue(_ ctx: UnsafeMutableRawPointer?, _ value: UnsafeMutableRawPointer?) {
    Unmanaged<MemoryCacheCallbacks>.fromOpaque(ctx.unsafelyUnwrapped)._withUnsafeGuaranteedRef {
        $0.destroyInlineValue(value.unsafelyUnwrapped)
    }
}

private func memoryCacheMemoryWarning(_ cache: OpaquePointer?, _ ctx: UnsafeMutableRawPointer?) {
    guard let ctx else { return }
    Unmanaged<MemoryCacheCallbacks>.fromOpaque(ctx).takeUnretainedValue().memoryWarning()
}

private func memoryCacheEnterBackground(_ cache: OpaquePointer?, _ ctx: UnsafeMutableRawPointer?) {
    guard let ctx else { return }
    Unmanaged<MemoryCacheCallbacks>.fromOpaque(ctx).takeUnretainedValue().enterBackground()
}

// The removal listener (no lock held; the key and value are borrowed for the call).
private func memoryCacheRemoved(
    _ ctx: UnsafeMutableRawPointer?, _ key: UnsafeRawPointer?, _ keyLength: Int,
    _ value: UnsafeMutableRawPointer?, _ cause: yyc_removal_cause
) {
    guard let ctx, let value else { return }
    Unmanaged<MemoryCacheCallbacks>.fromOpaque(ctx).takeUnretainedValue().removed(
        key: UnsafeRawBufferPointer(start: key, count: keyLength), value: value, cause: cause)
}

// The free handler: the C cache is gone and calls back no more; drop its reference.
private func memoryCacheFreed(_ ctx: UnsafeMutableRawPointer?) {
    guard let ctx else { return }
    Unmanaged<MemoryCacheCallbacks>.fromOpaque(ctx).release()
}
