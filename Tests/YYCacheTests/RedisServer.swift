import Foundation

@testable import YYCache

/// A redis-server of a test's own: a unix socket in a temporary folder, no persistence
/// (`--save ''`), killed when the object goes away. Tests that need one are enabled only when
/// the server is installed (`make deps` installs it; CI has it).
final class RedisServer: @unchecked Sendable {
    static let binary: String? = {
        if let env = ProcessInfo.processInfo.environment["YYC_REDIS_SERVER"], !env.isEmpty { return env }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for dir in path.split(separator: ":") + ["/usr/local/bin", "/usr/bin", "/usr/sbin"] {
            let candidate = "\(dir)/redis-server"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }()

    /// Whether a redis-server is installed (tests are skipped, with this reason, when not).
    static var isAvailable: Bool { binary != nil }

    let folder: String
    let socket: String
    private var process: Process?

    var url: String { "unix://\(socket)" }

    init() throws {
        folder = FileManager.default.temporaryDirectory.path + "/yyc-redis-" + UUID().uuidString.prefix(8)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        socket = folder + "/redis.sock"
        try start()
    }

    func start() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: Self.binary!)
        process.arguments = [
            "--port", "0", "--unixsocket", socket, "--unixsocketperm", "700", "--save", "",
            "--appendonly", "no", "--dir", folder, "--loglevel", "warning",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        let up = eventually { FileManager.default.fileExists(atPath: socket) && (try? probe()) != nil }
        if !up { throw CacheError(code: .io, message: "redis-server did not start") }
    }

    private func probe() throws {
        _ = try RemoteCache(RemoteConfiguration(url: url, namespace: "probe"))
    }

    /// Runs one command with redis-cli (installed with redis-server); returns its output.
    @discardableResult
    func command(_ arguments: String...) throws -> String {
        let process = Process()
        let binary = URL(fileURLWithPath: Self.binary!).deletingLastPathComponent().path + "/redis-cli"
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["-s", socket] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: output, as: UTF8.self)
    }

    /// Kills it (SIGKILL) and waits for it.
    func kill() {
        guard let process else { return }
        Foundation.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        self.process = nil
        try? FileManager.default.removeItem(atPath: socket)
    }

    deinit {
        kill()
        try? FileManager.default.removeItem(atPath: folder)
    }
}
