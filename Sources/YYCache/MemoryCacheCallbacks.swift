import CYYCache
import Foundation
import Synchronization

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

    /// Inline values: the value type's copy and destroy (``MemoryCacheInlineOps/none`` otherwise).
    let inlineOps: MemoryCacheInlineOps

    init(inlineOps: MemoryCacheInlineOps) {
        self.inlineOps = inlineOps
    }

    /// Called by the C core's memory-warning hook, on the thread of `handleMemoryWarning()`.
    func memoryWarning() {}

    /// Called by the C core's enter-background hook, on the thread of `handleEnterBackground()`.
    func enterBackground() {}

    /// The value callbacks for `yyc_memcache_new`, with `self` as their context (not retained).
    func valueCallbacks() -> yyc_value_callbacks {
        yyc_value_callbacks(
            retain: memoryCacheRetainValue,
            release: memoryCacheReleaseValue,
            ctx: Unmanaged.passUnretained(self).toOpaque())
    }

    /// The inline value type for `yyc_memcache_new_inline`, with `self` as its context (not
    /// retained): no callbacks for trivial values, else copy and destroy through this object.
    func inlineValueType(size: Int, alignment: Int, trivial: Bool) -> yyc_inline_value_type {
        yyc_inline_value_type(
            size: size, align: alignment,
            copy: trivial ? nil : memoryCacheCopyValue,
            destroy: trivial ? nil : memoryCacheDestroyValue,
            ctx: Unmanaged.passUnretained(self).toOpaque())
    }

    /// Ends the life of the inline value at `value` (the destroy callback; never under the
    /// lock). The C core frees the bytes when this returns, so a value bound for the main queue
    /// moves to a heap cell first; the cell travels as an integer (no other thread touches it
    /// after this hop).
    final func destroyInlineValue(_ value: UnsafeMutableRawPointer) {
        if releasesOnMainThread.load(ordering: .relaxed) && !MainQueue.isCurrent {
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
    let onMain = Unmanaged<MemoryCacheCallbacks>.fromOpaque(ctx)._withUnsafeGuaranteedRef {
        $0.releasesOnMainThread.load(ordering: .relaxed)
    }
    if onMain && !MainQueue.isCurrent {
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

// The free handler: the C cache is gone and calls back no more; drop its reference.
private func memoryCacheFreed(_ ctx: UnsafeMutableRawPointer?) {
    guard let ctx else { return }
    Unmanaged<MemoryCacheCallbacks>.fromOpaque(ctx).release()
}
