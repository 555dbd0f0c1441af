import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Counts live ``Tracked`` objects (swift-collections' LifetimeTracker idea): a test that ends
/// with `live == 0` released every value exactly once (a double release would crash or drive
/// the count negative).
final class LifetimeTracker: Sendable {
    let live = Atomic<Int>(0)
    let created = Atomic<Int>(0)
    let destroyed = Atomic<Int>(0)
    /// pthread ids (as integers) of the threads that ran the last deinits, and whether one was
    /// the main thread.
    let lastDeinitThread = Atomic<UInt>(0)
    let deinitsOnMainThread = Atomic<Int>(0)

    func make(_ id: Int) -> Tracked { Tracked(id, tracker: self) }

    var liveCount: Int { live.load(ordering: .acquiring) }
}

/// A value whose lifetime is counted by a ``LifetimeTracker``.
final class Tracked: Sendable {
    let id: Int
    let tracker: LifetimeTracker
    let onDeinit: (@Sendable () -> Void)?

    init(_ id: Int, tracker: LifetimeTracker, onDeinit: (@Sendable () -> Void)? = nil) {
        self.id = id
        self.tracker = tracker
        self.onDeinit = onDeinit
        tracker.live.add(1, ordering: .relaxed)
        tracker.created.add(1, ordering: .relaxed)
    }

    deinit {
        onDeinit?()
        tracker.lastDeinitThread.store(currentThreadID(), ordering: .relaxed)
        if onMainQueue() { tracker.deinitsOnMainThread.add(1, ordering: .relaxed) }
        tracker.destroyed.add(1, ordering: .relaxed)
        let before = tracker.live.subtract(1, ordering: .acquiringAndReleasing).oldValue
        precondition(before > 0, "a value was released more than once")
    }
}

/// Whether the caller is on the main thread or runs `DispatchQueue.main` (on Linux the main
/// queue is drained by another thread once the main thread has called `dispatchMain()`).
func onMainQueue() -> Bool {
    _ = mainQueueMarked
    return Thread.isMainThread || DispatchQueue.getSpecific(key: mainQueueKey) == true
}

private let mainQueueKey = DispatchSpecificKey<Bool>()
private let mainQueueMarked: Bool = {
    DispatchQueue.main.setSpecific(key: mainQueueKey, value: true)
    return true
}()

func currentThreadID() -> UInt {
    UInt(pthread_self())
}

/// Polls `condition` every millisecond until it holds or `timeout` passes (never a fixed
/// sleep that guesses how long background work takes). The default deadline is a minute: it
/// only bounds a failing run, and a loaded machine under ThreadSanitizer has taken over ten
/// seconds to run one background release.
///
/// - Returns: Whether the condition held before the deadline.
func eventually(timeout: Duration = .seconds(60), _ condition: () -> Bool) -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while clock.now < deadline {
        if condition() { return true }
        usleep(1000)
    }
    return condition()
}

/// Runs `body(index)` on `count` real threads at once and waits for all of them.
func onThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        let thread = Thread {
            body(index)
            group.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    group.wait()
}

/// A fresh temporary folder for one test, removed by ``remove()``.
struct TemporaryFolder: ~Copyable {
    let path: String

    init(_ function: String = #function) {
        let base = FileManager.default.temporaryDirectory.path
        let name = function.filter { $0.isLetter || $0.isNumber }
        path = "\(base)/yycache-tests-\(name)-\(UUID().uuidString)"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// A path inside the folder.
    func appending(_ component: String) -> String { path + "/" + component }

    deinit {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Whether this process services `DispatchQueue.main` (Swift Testing's async entry point drains
/// it on Linux; a synchronous `main` would not). Waits up to `timeout` for a block sent there to
/// run: a liveness wait that returns as soon as it does (under TSan, with every suite running in
/// parallel, the main queue can take seconds to get to it).
func mainQueueRuns(timeout: Duration = .seconds(60)) async -> Bool {
    let ran = Atomic<Bool>(false)
    DispatchQueue.main.async { ran.store(true, ordering: .relaxed) }
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    while clock.now < deadline {
        if ran.load(ordering: .relaxed) { return true }
        try? await Task.sleep(for: .milliseconds(2))
    }
    return ran.load(ordering: .relaxed)
}
