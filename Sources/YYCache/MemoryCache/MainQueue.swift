import Dispatch

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

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
        return isMainThread || DispatchQueue.getSpecific(key: key) == true
    }

    /// Whether the caller is the process's main thread (what Foundation's `Thread.isMainThread`
    /// answers, without linking full Foundation for it).
    private static var isMainThread: Bool {
        #if canImport(Darwin)
            return pthread_main_np() != 0
        #else
            // Linux: the main thread's thread ID is the process ID. Glibc declares gettid(2)
            // only under _GNU_SOURCE, which Swift's Glibc module does not define, so it is
            // looked up once (glibc >= 2.30 and musl >= 1.2.2 export it).
            guard let gettid = threadID else { return false }
            return gettid() == getpid()
        #endif
    }

    #if !canImport(Darwin)
        private static let threadID: (@convention(c) () -> pid_t)? = {
            guard let symbol = dlsym(dlopen(nil, RTLD_LAZY), "gettid") else { return nil }
            return unsafeBitCast(symbol, to: (@convention(c) () -> pid_t).self)
        }()
    #endif
}
