/*
 * available_memory.c - how much memory the process may use (yyc_available_memory, cache.h).
 *
 * The smallest of: physical memory (sysconf), and the memory limit of the process's cgroup or of
 * any of its ancestors: cgroup v2's memory.max ("max" = none) when the unified hierarchy has the
 * memory controller, else cgroup v1's memory.limit_in_bytes. The cgroup path comes from
 * /proc/self/cgroup; inside a container the path may not exist in the container's view of
 * /sys/fs/cgroup, so each ancestor is tried up to the root of the mount.
 *
 * Test builds read the files under a root folder of fixtures (yyc__available_memory_under).
 */
#include "platform/internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The number in the file at path, or 0 when it is missing, unreadable, "max" or not a number. */
static uint64_t read_limit(const char *path) {
    FILE *f = fopen(path, "re");
    if (!f) return 0;
    char buf[64];
    uint64_t v = 0;
    if (fgets(buf, sizeof buf, f)) {
        char *end = NULL;
        unsigned long long n = strtoull(buf, &end, 10);
        if (end != buf && (*end == '\n' || *end == '\0')) v = (uint64_t)n;
    }
    fclose(f);
    return v;
}

/* The smallest non-zero limit in `file` of the folder mount/cgroup and its ancestors up to
 * mount itself (0 when none has one). cgroup is an absolute path inside the hierarchy. */
static uint64_t hierarchy_limit(const char *mount, const char *cgroup, const char *file) {
    char dir[4096];
    int n = snprintf(dir, sizeof dir, "%s%s", mount, cgroup);
    if (n < 0 || (size_t)n >= sizeof dir) return 0;
    size_t root_len = strlen(mount);
    uint64_t best = 0;
    for (;;) {
        size_t len = strlen(dir);
        while (len > root_len && dir[len - 1] == '/') dir[--len] = '\0';
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, file);
        uint64_t v = read_limit(path);
        if (v && (!best || v < best)) best = v;
        if (len <= root_len) break;
        char *slash = strrchr(dir + root_len, '/');
        if (!slash) break;
        *slash = '\0';
    }
    return best;
}

/* Whether the comma-separated controller list names `name`. */
static bool lists_controller(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len == n && memcmp(p, name, n) == 0) return true;
        if (!comma) break;
        p = comma + 1;
    }
    return false;
}

/* The cgroup limit (0: none) with /proc and /sys under root ("" for the real ones). */
static uint64_t cgroup_limit(const char *root) {
    char path[4096];
    snprintf(path, sizeof path, "%s/proc/self/cgroup", root);
    FILE *f = fopen(path, "re");
    if (!f) return 0;
    char line[4096];
    char v2[4096] = "", v1[4096] = "";
    bool have_v2 = false, have_v1 = false;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        /* hierarchy-id:controller-list:path */
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2 || c2[1] != '/') continue;
        *c1 = *c2 = '\0';
        const char *controllers = c1 + 1, *cg = c2 + 1;
        if (strcmp(line, "0") == 0 && !*controllers) {
            snprintf(v2, sizeof v2, "%s", cg);
            have_v2 = true;
        } else if (lists_controller(controllers, "memory")) {
            snprintf(v1, sizeof v1, "%s", cg);
            have_v1 = true;
        }
    }
    fclose(f);
    uint64_t limit = 0;
    if (have_v2) {
        snprintf(path, sizeof path, "%s/sys/fs/cgroup", root);
        limit = hierarchy_limit(path, v2, "memory.max");
    }
    if (!limit && have_v1) {
        snprintf(path, sizeof path, "%s/sys/fs/cgroup/memory", root);
        limit = hierarchy_limit(path, v1, "memory.limit_in_bytes");
    }
    return limit;
}

static uint64_t physical_memory(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page_size <= 0) return 0;
    if ((uint64_t)pages > UINT64_MAX / (uint64_t)page_size) return UINT64_MAX;
    return (uint64_t)pages * (uint64_t)page_size;
}

/* yyc_available_memory with /proc and /sys under root. */
static uint64_t available_memory_under(const char *root) {
    uint64_t phys = physical_memory();
    uint64_t limit = cgroup_limit(root);
    /* cgroup v1 says "no limit" with a huge number (PAGE_COUNTER_MAX pages): the min drops it. */
    if (limit && (!phys || limit < phys)) return limit;
    return phys;
}

uint64_t yyc_available_memory(void) { return available_memory_under(""); }

#ifdef YYC_TESTING
/* The same, reading /proc/self/cgroup and /sys/fs/cgroup under the folder root (fixtures). */
uint64_t yyc__available_memory_under(const char *root);
uint64_t yyc__available_memory_under(const char *root) { return available_memory_under(root); }
#endif
