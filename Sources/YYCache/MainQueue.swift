import Dispatch
import Foundation

/// "The main thread" for ``MemoryCache/releasesValuesOnMainThread``: the main thread itself, or
/// whatever thread is running `DispatchQueue.main` (on Linux, `dispatchMain()` and an async
/// `main` exit the main thread and drain the main queue on another thread).
enum MainQueue {
    // `marked` sets the key on the main queue once (lazy static initializers are thread-safe).
    private static let key = DispatchSpecificKey<Bool>()
    private static let marked: Bool = {
        DispatchQueue.main.setSpecific(key: key, value: true)
        return true
    }()

    /// Whether the caller runs on the main thread or on the main queue.
    static var isCurrent: Bool {
        guard marked else { return false }
        return Thread.isMainThread || DispatchQueue.getSpecific(key: key) == true
    }
}
