// The smallest program that uses MemoryCache and DiskCache. `make foundation-check` reads the
// libraries its binary needs: it must not need full Foundation (libFoundation.so and its ICU
// data, lib_FoundationICU.so), only what the library target imports. It imports no Foundation
// itself, so whatever it links comes from YYCache.
import YYCache

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

let memory = MemoryCache<String, Int>()
memory["answer"] = 42

var template = Array("/tmp/yycache-size-probe.XXXXXX".utf8CString)
guard
    let folder = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) })
        .map({ String(cString: $0) })
else {
    fatalError("mkdtemp failed")
}
let disk = try DiskCache(path: folder + "/cache")
try disk.setValue(memory["answer"], forKey: "answer")
let back = try disk.value(Int.self, forKey: "answer")
disk.close()
_ = system("rm -rf '\(folder)'")
print(back == 42 ? "ok" : "wrong value: \(String(describing: back))")
