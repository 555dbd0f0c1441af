import CYYCache
import Foundation
import Synchronization
import Testing

@testable import YYCache

/// A cache made where `Value` is not known to be `Sendable` (the callers-only release mode).
private func genericCache<Value>(of type: Value.Type) -> MemoryCache<String, Value> {
    MemoryCache<String, Value>()
}

private final class NotSendable {}

/// Set by the C memory-warning hook of ``MemoryCacheMemoryPressureTests/childProcessUnderMemoryPressure()``
/// (a C function pointer captures nothing).
private let pressureHookEntered = Atomic<Bool>(false)

@Suite struct MemoryCacheMemoryPressureTests {
    @Test func aCacheOfSendableValuesAnswersSystemMemoryPressureByDefaultOnLinux() {
        let cache = MemoryCache<String, Int>()
        #if os(Linux)
            #expect(cache.respondsToSystemMemoryPressure)
        #else
            #expect(!cache.respondsToSystemMemoryPressure)
        #endif
        cache.respondsToSystemMemoryPressure = false
        #expect(!cache.respondsToSystemMemoryPressure)
        #expect(!yyc_memcache_responds_to_system_memory_pressure(cache.handle))
        cache.respondsToSystemMemoryPressure = true
        #expect(yyc_memcache_responds_to_system_memory_pressure(cache.handle))
    }

    @Test func aCacheMadeInAGenericContextDoesNotAnswerByDefault() {
        let cache = genericCache(of: NotSendable.self)
        #expect(!yyc_memcache_responds_to_system_memory_pressure(cache.handle))
    }

    /// The watcher's thread hands the cache to ``MemoryCache/didReceiveMemoryWarning``: for a
    /// cache of values that are not `Sendable`, turning it on does not compile (checked by
    /// compiling two snippets against the YYCache module of this build).
    @Test func onlyACacheOfSendableValuesCanAnswerSystemMemoryPressure() throws {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let modules = executable.deletingLastPathComponent().appendingPathComponent("Modules").path
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let folder = TemporaryFolder()
        func typecheck(_ value: String) throws -> (status: Int32, output: String) {
            let file = folder.appending("\(value).swift")
            let source = """
                import YYCache
                final class NotSendable { var count = 0 }
                func turnOn(_ cache: MemoryCache<String, \(value)>) { cache.respondsToSystemMemoryPressure = true }
                """
            try source.write(toFile: file, atomically: true, encoding: .utf8)
            let compiler = Process()
            compiler.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            compiler.arguments = [
                "swiftc", "-typecheck", "-swift-version", "6", "-I", modules, "-I",
                root.appendingPathComponent("include").path,
                file,
            ]
            let output = Pipe()
            compiler.standardOutput = output
            compiler.standardError = output
            try compiler.run()
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            compiler.waitUntilExit()
            return (compiler.terminationStatus, text)
        }
        let sendable = try typecheck("Int")
        #expect(sendable.status == 0, "\(sendable.output)")  // the setup works
        let notSendable = try typecheck("NotSendable")
        #expect(notSendable.status != 0)
        #expect(notSendable.output.contains("Sendable"), "\(notSendable.output)")
    }

    // MARK: A pressure source this test controls, in another process

    /// The child half of ``systemMemoryPressureEmptiesTheCachesThatAnswerIt()``: does nothing
    /// unless that test started this process with `$MEMORY_PRESSURE_WATCH` naming its FIFO
    /// (read when this process's first cache starts the watcher).
    @Test func childProcessUnderMemoryPressure() throws {
        let environment = ProcessInfo.processInfo.environment
        guard environment["YYCACHE_TEST_PRESSURE_CHILD"] != nil,
            let fifo = environment["MEMORY_PRESSURE_WATCH"]
        else { return }
        let warned = Atomic<Int>(0)
        let answering = MemoryCache<String, Int>()
        answering.releasesValuesAsynchronously = false
        answering.didReceiveMemoryWarning = { _ in warned.add(1, ordering: .sequentiallyConsistent) }
        let witness = MemoryCache<String, Int>()  // tells when a later event has been handled
        let witnessed = Atomic<Int>(0)
        witness.didReceiveMemoryWarning = { _ in witnessed.add(1, ordering: .sequentiallyConsistent) }
        let deaf = MemoryCache<String, Int>()
        deaf.respondsToSystemMemoryPressure = false
        for cache in [answering, witness, deaf] {
            for i in 0..<10 { cache.setValue(i, forKey: "k\(i)") }
        }
        #expect(answering.respondsToSystemMemoryPressure && witness.respondsToSystemMemoryPressure)
        #expect(yyc_memory_pressure_watcher_source() == YYC_MEMORY_PRESSURE_SERVICE_MANAGER)

        let writer = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)
        try #require(writer >= 0)
        defer { close(writer) }
        func signal() { #expect(write(writer, "x", 1) == 1) }

        signal()
        #expect(eventually(timeout: .seconds(60)) { answering.totalCount == 0 && witness.totalCount == 0 })
        #expect(warned.load(ordering: .sequentiallyConsistent) == 1)
        #expect(deaf.totalCount == 10)

        // Opted out: a later event (seen by the witness) does nothing to it. Two events, so that
        // the first one's whole pass has finished when the witness sees the second.
        answering.respondsToSystemMemoryPressure = false
        answering.setValue(1, forKey: "back")
        for round in 2...3 {
            signal()
            #expect(eventually(timeout: .seconds(60)) { witnessed.load(ordering: .sequentiallyConsistent) >= round })
        }
        #expect(answering.totalCount == 1)
        #expect(warned.load(ordering: .sequentiallyConsistent) == 1)
        #expect(deaf.totalCount == 10)

        // The last reference dropped while the watcher runs the cache's handler (which holds
        // the cache): the deinit then runs on the watcher's thread, inside the handling (the C
        // core defers the free to its end), and the watcher goes on.
        let entered = Atomic<Bool>(false)
        let dropping = Atomic<Bool>(false)
        let seen = Atomic<Int>(-1)
        var doomed: MemoryCache<String, Int>? = MemoryCache<String, Int>()
        doomed?.setValue(7, forKey: "seven")
        doomed?.didReceiveMemoryWarning = { cache in
            entered.store(true, ordering: .sequentiallyConsistent)
            while !dropping.load(ordering: .sequentiallyConsistent) { usleep(1000) }
            usleep(10_000)  // the caller's reference is gone by now, most likely
            seen.store(cache.totalCount, ordering: .sequentiallyConsistent)
        }
        signal()
        #expect(eventually(timeout: .seconds(60)) { entered.load(ordering: .sequentiallyConsistent) })
        dropping.store(true, ordering: .sequentiallyConsistent)
        doomed = nil
        #expect(eventually(timeout: .seconds(60)) { seen.load(ordering: .sequentiallyConsistent) == 1 })
        let before = witnessed.load(ordering: .sequentiallyConsistent)
        signal()
        #expect(eventually(timeout: .seconds(60)) { witnessed.load(ordering: .sequentiallyConsistent) > before })

        // The watcher reaches a cache whose deinit has begun: its handler is not given that
        // cache (a handler that kept it would keep a cache being destroyed: the process would
        // abort). The C hook below holds the watcher in the handling until the deinit has taken
        // the cache out of the watcher's registry (its first step), then forwards as usual.
        let kept = Mutex<[MemoryCache<String, Int>]>([])
        var dying: MemoryCache<String, Int>? = MemoryCache<String, Int>()
        dying?.didReceiveMemoryWarning = { cache in kept.withLock { $0.append(cache) } }
        let dyingHandle = dying!.handle
        yyc_memcache_set_memory_warning_handler(
            dyingHandle,
            { cache, context in
                pressureHookEntered.store(true, ordering: .sequentiallyConsistent)
                while yyc_memcache_responds_to_system_memory_pressure(cache) { usleep(1000) }
                Unmanaged<MemoryCacheCallbacks>.fromOpaque(context!).takeUnretainedValue().memoryWarning()
            }, Unmanaged.passUnretained(dying!.events).toOpaque())
        let beforeDying = witnessed.load(ordering: .sequentiallyConsistent)
        signal()
        #expect(eventually(timeout: .seconds(60)) { pressureHookEntered.load(ordering: .sequentiallyConsistent) })
        dying = nil  // waits for the handling of the cache to end
        #expect(eventually(timeout: .seconds(60)) { witnessed.load(ordering: .sequentiallyConsistent) > beforeDying })
        #expect(kept.withLock { $0.isEmpty })
    }

    @Test func systemMemoryPressureEmptiesTheCachesThatAnswerIt() throws {
        #if os(Linux)
            let folder = TemporaryFolder()
            let fifo = folder.appending("pressure.fifo")
            try #require(mkfifo(fifo, 0o600) == 0)
            let child = Process()
            child.executableURL = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            child.arguments = ["--testing-library", "swift-testing", "--filter", "childProcessUnderMemoryPressure"]
            var environment = ProcessInfo.processInfo.environment
            environment["YYCACHE_TEST_PRESSURE_CHILD"] = "1"
            environment["MEMORY_PRESSURE_WATCH"] = fifo
            environment["MEMORY_PRESSURE_WRITE"] = nil
            child.environment = environment
            let output = Pipe()
            child.standardOutput = output
            child.standardError = output
            try child.run()
            let log = output.fileHandleForReading.readDataToEndOfFile()  // until the child exits
            child.waitUntilExit()
            let text = String(decoding: log, as: UTF8.self)
            #expect(child.terminationStatus == 0, "\(text)")
            // The child ran its half (a filter that matched nothing would pass too).
            #expect(text.contains("childProcessUnderMemoryPressure"))
        #endif
    }
}
