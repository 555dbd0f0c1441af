// CaffeineReplay - the Caffeine (W-TinyLFU) anchor of `make bench`'s hit-ratio table: replays
// the same traces as Benchmarks/c/hit_ratio.c through Caffeine's getIfPresent / put (a put on
// every miss, maximumSize = 2%, 10%, 30% of the trace's distinct keys, maintenance on the
// calling thread: executor(Runnable::run)). Built and run by Benchmarks/run with javac/java and
// Debian's libcaffeine-java (Caffeine 2.6.2).
//
// Usage: java -cp caffeine.jar:DIR CaffeineReplay [--quick] NAME=PATH...
//   PATH: an .xz file (read through `xz -dc`) or raw big-endian 32-bit keys.
// Output: one JSON line per trace and size, as hit_ratio.c's (policy "caffeine").

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.FileInputStream;
import java.io.InputStream;
import java.util.Arrays;

public final class CaffeineReplay {
    public static void main(String[] args) throws Exception {
        boolean quick = Arrays.asList(args).contains("--quick");
        for (String arg : args) {
            if (arg.equals("--quick")) continue;
            int eq = arg.indexOf('=');
            String name = arg.substring(0, eq), path = arg.substring(eq + 1);
            int[] keys = read(path, quick ? 200000 : Integer.MAX_VALUE);
            int[] sorted = keys.clone();
            Arrays.sort(sorted);
            int distinct = 0;
            for (int i = 0; i < sorted.length; i++)
                if (i == 0 || sorted[i] != sorted[i - 1]) distinct++;
            for (int pct : new int[] {2, 10, 30}) {
                long size = Math.max(1, (long) distinct * pct / 100);
                Cache<Integer, Boolean> cache = Caffeine.newBuilder()
                        .maximumSize(size).executor(Runnable::run).build();
                long hits = 0;
                long t0 = System.nanoTime();
                for (int k : keys) {
                    Integer key = k;
                    if (cache.getIfPresent(key) != null) hits++;
                    else cache.put(key, Boolean.TRUE);
                }
                double secs = (System.nanoTime() - t0) / 1e9;
                System.out.printf("{\"group\":\"hitratio\",\"trace\":\"%s\",\"requests\":%d,\"distinct\":%d,"
                        + "\"size_pct\":%d,\"size\":%d,\"policy\":\"caffeine\",\"hits\":%d,"
                        + "\"hit_ratio\":%.4f,\"seconds\":%.3f}%n",
                        name, keys.length, distinct, pct, size, hits, (double) hits / keys.length, secs);
            }
        }
    }

    static int[] read(String path, int limit) throws Exception {
        Process xz = null;
        InputStream in;
        if (path.endsWith(".xz")) {
            xz = new ProcessBuilder("xz", "-dc", "--", path).redirectErrorStream(false).start();
            in = xz.getInputStream();
        } else {
            in = new FileInputStream(path);
        }
        int[] keys = new int[1 << 20];
        int n = 0;
        try (DataInputStream data = new DataInputStream(new BufferedInputStream(in, 1 << 16))) {
            while (n < limit) {
                int k;
                try {
                    k = data.readInt();
                } catch (EOFException end) {
                    break;
                }
                if (n == keys.length) keys = Arrays.copyOf(keys, n * 2);
                keys[n++] = k;
            }
        }
        if (xz != null) xz.destroy();
        return Arrays.copyOf(keys, n);
    }
}
