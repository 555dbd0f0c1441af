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
        #expect(!cache.respondsToSystemMemoryPressure)
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
