// yycache-bench: the Swift side of `make bench` (see Benchmarks/run, which builds it in release
// mode, runs it next to the C program Benchmarks/c/bench.c and prints the merged report).
//
// Prints one JSON object per line; see Support.swift for the format. Without --group it runs
// every group but footprint (`yycache-bench --quick` is a smoke run of a few seconds).
// -D YYCB_NO_DISKCACHE / YYCB_NO_CACHE leave out the DiskCache / Cache rows (for a build of the
// overlay without them).

import Foundation

parseOptions()

func run(_ group: String) {
    switch group {
    case "mem-str": benchMemory(String.self, group: "mem-str")
    case "mem-int": benchMemory(Int.self, group: "mem-int")
    case "mixed": benchMixed()
    case "disk-small": benchDisk(group: "disk-small", large: false)
    case "disk-large": benchDisk(group: "disk-large", large: true)
    case "footprint": benchFootprint()
    default: usage()
    }
}

// The async group awaits from this top-level code (the main actor); the others are synchronous.
if opt.group.isEmpty {
    for group in ["mem-int", "mem-str", "mixed", "disk-small", "disk-large"] { run(group) }
    await benchAsync()
} else if opt.group == "async" {
    await benchAsync()
} else {
    run(opt.group)
}
