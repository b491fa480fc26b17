/* What the generated pipeline code calls at run time: byte access, hashes and checksums,
   table lookup, the packet replication engine's configuration, and the context holding the
   switch state. The generator defines P4G_* (sizes of this program's objects) before this. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define P4S_NONE UINT64_MAX /* -1 in the Python slot list */
#define P4S_FN static __attribute__((unused)) /* a helper some programs do not call */

/* --- bytes ---------------------------------------------------------------------------------- */

P4S_FN inline uint64_t p4s_get(const uint8_t *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = (v << 8) | p[i];
    return v;
}

P4S_FN inline void p4s_put(uint8_t *p, uint64_t v, int n) {
    for (int i = n - 1; i >= 0; i--) {
        p[i] = (uint8_t)v;
        v >>= 8;
    }
}

/* `width` (<= 64) bits of `v` at bit `pos` of a zeroed buffer, most significant bit first */
P4S_FN void p4s_put_bits(uint8_t *buf, uint32_t pos, uint64_t v, uint32_t width) {
    for (uint32_t i = 0; i < width; i++) {
        if ((v >> (width - 1 - i)) & 1) buf[(pos + i) >> 3] |= (uint8_t)(0x80 >> ((pos + i) & 7));
    }
}

P4S_FN uint64_t p4s_get_bits(const uint8_t *buf, uint32_t pos, uint32_t width) {
    uint64_t v = 0;
    for (uint32_t i = 0; i < width; i++) v = (v << 1) | ((buf[(pos + i) >> 3] >> (7 - ((pos + i) & 7))) & 1);
    return v;
}

/* --- saturating arithmetic on `w`-bit values ------------------------------------------------ */

P4S_FN inline uint64_t p4s_mask(int w) { return w >= 64 ? UINT64_MAX : (1ull << w) - 1; }

P4S_FN inline uint64_t p4s_sat_addu(uint64_t a, uint64_t b, int w) {
    uint64_t s;
    if (__builtin_add_overflow(a, b, &s) || s > p4s_mask(w)) return p4s_mask(w);
    return s;
}

P4S_FN inline uint64_t p4s_sat_subu(uint64_t a, uint64_t b, int w) {
    (void)w;
    return a > b ? a - b : 0;
}

P4S_FN inline __int128 p4s_sext(uint64_t v, int w) {
    uint64_t sign = 1ull << (w - 1);
    return (__int128)(int64_t)((v ^ sign) - sign);
}

P4S_FN inline uint64_t p4s_clamp(__int128 v, int w) {
    __int128 hi = ((__int128)1 << (w - 1)) - 1, lo = -((__int128)1 << (w - 1));
    v = v > hi ? hi : v < lo ? lo : v;
    return (uint64_t)v & p4s_mask(w);
}

P4S_FN inline uint64_t p4s_sat_adds(uint64_t a, uint64_t b, int w) {
    return p4s_clamp(p4s_sext(a, w) + p4s_sext(b, w), w);
}

P4S_FN inline uint64_t p4s_sat_subs(uint64_t a, uint64_t b, int w) {
    return p4s_clamp(p4s_sext(a, w) - p4s_sext(b, w), w);
}

/* --- hashes and checksums (bit-exact with compiler/support.py) ------------------------------ */

static uint16_t p4s_crc16_table[256];
static uint32_t p4s_crc32_table[256];

P4S_FN void p4s_tables_init(void) {
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c16 = b, c32 = b;
        for (int k = 0; k < 8; k++) {
            c16 = (c16 & 1) ? (c16 >> 1) ^ 0xA001 : c16 >> 1;
            c32 = (c32 & 1) ? (c32 >> 1) ^ 0xEDB88320u : c32 >> 1;
        }
        p4s_crc16_table[b] = (uint16_t)c16;
        p4s_crc32_table[b] = c32;
    }
}

P4S_FN uint64_t p4s_crc16(const uint8_t *d, uint32_t n) {
    uint32_t crc = 0;
    for (uint32_t i = 0; i < n; i++) crc = (crc >> 8) ^ p4s_crc16_table[(crc ^ d[i]) & 0xFF];
    return crc;
}

P4S_FN uint64_t p4s_crc32(const uint8_t *d, uint32_t n) {
    uint32_t crc = 0xFFFFFFFFu;
    for (uint32_t i = 0; i < n; i++) crc = (crc >> 8) ^ p4s_crc32_table[(crc ^ d[i]) & 0xFF];
    return crc ^ 0xFFFFFFFFu;
}

P4S_FN uint64_t p4s_csum16(const uint8_t *d, uint32_t n) {
    uint64_t total = 0;
    uint32_t i = 0;
    for (; i + 1 < n; i += 2) total += ((uint32_t)d[i] << 8) | d[i + 1];
    if (i < n) total += (uint32_t)d[i] << 8;
    while (total >> 16) total = (total & 0xFFFF) + (total >> 16);
    return ~total & 0xFFFF;
}

P4S_FN uint64_t p4s_xor16(const uint8_t *d, uint32_t n) {
    uint32_t out = 0, i = 0;
    for (; i + 1 < n; i += 2) out ^= ((uint32_t)d[i] << 8) | d[i + 1];
    if (i < n) out ^= (uint32_t)d[i] << 8;
    return out;
}

/* the low 64 bits of the big-endian number the bytes spell */
P4S_FN uint64_t p4s_identity(const uint8_t *d, uint32_t n) {
    uint64_t v = 0;
    for (uint32_t i = 0; i < n; i++) v = (v << 8) | d[i];
    return v;
}

/* that number modulo `m` (m > 0), however many bytes it has */
P4S_FN uint64_t p4s_identity_mod(const uint8_t *d, uint32_t n, uint64_t m) {
    unsigned __int128 r = 0;
    for (uint32_t i = 0; i < n; i++) r = ((r << 8) | d[i]) % m;
    return (uint64_t)r;
}

/* --- tables --------------------------------------------------------------------------------- */

typedef struct {
    uint32_t nkeys, nargs, exact, n;
    uint64_t *keys, *masks;  /* n * nkeys, in lookup order */
    uint32_t *action;
    uint64_t *args;          /* n * nargs */
    uint64_t *packets, *bytes;
    uint8_t *hit;            /* tables with support_timeout: set when the entry is hit */
    uint32_t *index, index_size;  /* exact tables: open addressing, entry + 1 (0: free) */
    uint32_t default_action;
    uint64_t default_args[P4G_MAX_ARGS + 1];
    uint64_t default_packets, default_bytes;
} p4s_table;

P4S_FN uint64_t p4s_key_hash(const uint64_t *k, uint32_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (uint32_t i = 0; i < n; i++) {
        h ^= k[i] + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
        h *= 0xBF58476D1CE4E5B9ull;
    }
    return h ^ (h >> 31);
}

P4S_FN int64_t p4s_lookup(const p4s_table *t, const uint64_t *k) {
    uint32_t nk = t->nkeys;
    if (t->exact) {
        if (!t->index_size) return -1;
        uint32_t m = t->index_size - 1, i = (uint32_t)p4s_key_hash(k, nk) & m;
        for (;; i = (i + 1) & m) {
            uint32_t e = t->index[i];
            if (!e) return -1;
            if (!memcmp(t->keys + (size_t)(e - 1) * nk, k, nk * sizeof(uint64_t))) return e - 1;
        }
    }
    for (uint32_t e = 0; e < t->n; e++) {
        const uint64_t *v = t->keys + (size_t)e * nk, *m = t->masks + (size_t)e * nk;
        uint32_t j = 0;
        while (j < nk && (k[j] & m[j]) == v[j]) j++;
        if (j == nk) return e;
    }
    return -1;
}

P4S_FN void p4s_table_free(p4s_table *t) {
    free(t->keys); free(t->masks); free(t->action); free(t->args);
    free(t->packets); free(t->bytes); free(t->hit); free(t->index);
    t->keys = t->masks = t->args = t->packets = t->bytes = NULL;
    t->hit = NULL;
    t->action = t->index = NULL;
    t->n = t->index_size = 0;
}

/* --- the packet replication engine ---------------------------------------------------------- */

typedef struct {
    uint32_t n;
    uint64_t *ids;          /* sorted */
    uint32_t *first, *count;
    uint64_t *cut;          /* clone sessions: packet_length_bytes */
    uint32_t nreplicas;
    uint64_t *port, *rid;
} p4s_pre;

P4S_FN int64_t p4s_pre_find(const p4s_pre *p, uint64_t id) {
    uint32_t lo = 0, hi = p->n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (p->ids[mid] < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < p->n && p->ids[lo] == id ? (int64_t)lo : -1;
}

P4S_FN void p4s_pre_free(p4s_pre *p) {
    free(p->ids); free(p->first); free(p->count); free(p->cut); free(p->port); free(p->rid);
    memset(p, 0, sizeof *p);
}

/* --- the context: one pipeline's state ------------------------------------------------------ */

enum {
    P4S_DROP_INGRESS, P4S_DROP_EGRESS, P4S_DROP_GROUP_EMPTY, P4S_DROP_SESSION_MISSING,
    P4S_DROP_CLONE_DEPTH, P4S_DROP_INTERNAL, P4S_DROP_OUTPUT_FULL, P4S_DROPS
};

#define P4S_TOUCH_MAX 256

typedef struct {
    pthread_mutex_t mu;
    uint64_t *reg[P4G_REGISTERS + 1];
    uint64_t *cpackets[P4G_COUNTERS + 1], *cbytes[P4G_COUNTERS + 1];
    p4s_table tables[P4G_TABLES + 1];
    p4s_pre groups, sessions;
    uint64_t drops[P4S_DROPS];
    uint64_t parser_errors[256];
    uint64_t rng;
    uint64_t start_ns;
    int clock_set;      /* timestamps from `clock_us`, set by the caller, not from the clock */
    uint64_t clock_us;
    int drop_rejected;
    int exiting;  /* `exit` ran inside an action: leave the control */
    uint32_t touched_n;  /* direct counter updates and ageing hits of the current frame */
    int64_t touched[P4S_TOUCH_MAX][3];
} p4s_ctx;

P4S_FN void p4s_touch(p4s_ctx *c, uint32_t table, int64_t entry, uint64_t length) {
    if (c->touched_n < P4S_TOUCH_MAX) {
        c->touched[c->touched_n][0] = table;
        c->touched[c->touched_n][1] = entry;
        c->touched[c->touched_n][2] = (int64_t)length;
    }
    c->touched_n++;
}

P4S_FN uint64_t p4s_now_us(const p4s_ctx *c) {
    if (c->clock_set) return c->clock_us;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec - c->start_ns) / 1000;
}

/* splitmix64: the `random` extern's generator (not Python's sequence) */
P4S_FN uint64_t p4s_next(p4s_ctx *c) {
    uint64_t z = (c->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* a uniform value in lo..hi (lo < hi) */
P4S_FN uint64_t p4s_random(p4s_ctx *c, uint64_t lo, uint64_t hi) {
    uint64_t span = hi - lo + 1;
    if (!span) return p4s_next(c);
    uint64_t limit = UINT64_MAX - UINT64_MAX % span, r;
    do r = p4s_next(c); while (r >= limit);
    return lo + r % span;
}
