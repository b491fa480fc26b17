/* The v1model architecture around the generated code, as compiler/v1model.py::Pipeline runs it:
   parser -> verify checksum -> ingress -> replication -> egress per copy -> compute checksum ->
   deparser, with I2E and E2E clones. Then the functions the Python side calls. */
#define P4S_NORMAL 0
#define P4S_INGRESS_CLONE 1
#define P4S_EGRESS_CLONE 2
#define P4S_REPLICATION 5
#define P4S_DROP_PORT 511
#define P4S_MAX_EGRESS_CLONES 8

static const uint32_t p4s_ntables = P4G_TABLES; /* a variable: no warning when it is 0 */

typedef struct {
    p4s_ctx *c;
    const uint8_t *data;
    uint32_t len;
    p4s_out *out;
    int failed;
} p4s_run;

static void p4s_parser_error(p4s_ctx *c, uint64_t code) {
    if (code < 256) c->parser_errors[code]++;
    else c->drops[P4S_DROP_INTERNAL]++;
}

static void p4s_send(p4s_run *r, uint64_t *S, uint64_t cut) {
    p4s_out *out = r->out;
    if (out->n >= P4S_MAX_OUT) {
        r->c->drops[P4S_DROP_OUTPUT_FULL]++;
        return;
    }
    uint8_t *o = out->data[out->n];
    int64_t head = p4g_deparse(r->c, S, o, P4S_FRAME_MAX);
    uint64_t payload = S[P4G_PAYLOAD] < r->len ? S[P4G_PAYLOAD] : r->len;
    uint64_t rest = r->len - payload;
    if (head < 0 || (uint64_t)head + rest > P4S_FRAME_MAX) {
        r->failed = 1;
        return;
    }
    memcpy(o + head, r->data + payload, rest);
    uint64_t n = (uint64_t)head + rest;
    if (S[P4G_TRUNCATE] != P4S_NONE && S[P4G_TRUNCATE] < n) n = S[P4G_TRUNCATE];
    if (cut && cut < n) n = cut;
    out->port[out->n] = (uint32_t)S[P4G_SM_EGRESS_PORT];
    out->len[out->n] = (uint32_t)n;
    out->n++;
}

static void p4s_egress(p4s_run *r, uint64_t *S, uint64_t cut, int depth);

static const p4s_pre *p4s_session(p4s_ctx *c, const uint64_t *S, int64_t *at) {
    *at = p4s_pre_find(&c->sessions, S[P4G_CLONE_SESSION]);
    if (*at < 0) c->drops[P4S_DROP_SESSION_MISSING]++;
    return &c->sessions;
}

static void p4s_replicate(p4s_run *r, const uint64_t *S, const p4s_pre *p, int64_t at, int depth) {
    for (uint32_t i = p->first[at]; i < p->first[at] + p->count[at]; i++) {
        uint64_t copy[P4G_SLOTS];
        memcpy(copy, S, sizeof copy);
        copy[P4G_SM_EGRESS_PORT] = p->port[i];
        copy[P4G_SM_EGRESS_RID] = p->rid[i];
        p4s_egress(r, copy, p->cut ? p->cut[at] : 0, depth);
    }
}

static void p4s_clone_i2e(p4s_run *r, uint64_t *S) {
    int64_t at;
    S[P4G_CLONE] = 0;
    const p4s_pre *p = p4s_session(r->c, S, &at);
    if (at < 0) return;
    uint64_t clone[P4G_SLOTS];
    memcpy(clone, p4g_template, sizeof clone);
    p4g_keep(S[P4G_CLONE_FIELD_LIST], clone, S);
    int64_t off = p4g_parse(r->c, clone, r->data, r->len); /* the packet as it entered, again */
    if (off < 0) {
        p4s_parser_error(r->c, clone[P4G_SM_PARSER_ERROR]);
        if (r->c->drop_rejected) return;
    } else {
        clone[P4G_PAYLOAD] = (uint64_t)off;
    }
    clone[P4G_SM_INSTANCE_TYPE] = P4S_INGRESS_CLONE;
    p4s_replicate(r, clone, p, at, 0);
}

static void p4s_clone_e2e(p4s_run *r, uint64_t *S, int depth) {
    int64_t at;
    S[P4G_CLONE] = 0;
    if (depth >= P4S_MAX_EGRESS_CLONES) {
        r->c->drops[P4S_DROP_CLONE_DEPTH]++;
        return;
    }
    const p4s_pre *p = p4s_session(r->c, S, &at);
    if (at < 0) return;
    uint64_t clone[P4G_SLOTS];
    memcpy(clone, S, sizeof clone);
    for (uint32_t i = 0; i < sizeof p4g_metadata / sizeof p4g_metadata[0]; i++)
        clone[p4g_metadata[i]] = p4g_template[p4g_metadata[i]];
    p4g_keep(S[P4G_CLONE_FIELD_LIST], clone, S);
    clone[P4G_CLONE] = 0;
    clone[P4G_TRUNCATE] = P4S_NONE;
    clone[P4G_SM_INSTANCE_TYPE] = P4S_EGRESS_CLONE;
    p4s_replicate(r, clone, p, at, depth + 1);
}

static void p4s_egress(p4s_run *r, uint64_t *S, uint64_t cut, int depth) {
    S[P4G_SM_EGRESS_SPEC] = 0;
    S[P4G_SM_EGRESS_TS] = p4s_now_us(r->c);
    p4g_egress(r->c, S);
    if (S[P4G_CLONE]) p4s_clone_e2e(r, S, depth);
    if (S[P4G_SM_EGRESS_SPEC] == P4S_DROP_PORT) {
        r->c->drops[P4S_DROP_EGRESS]++;
        return;
    }
    p4g_compute_checksum(r->c, S);
    p4s_send(r, S, cut);
}

static void p4s_ingress(p4s_run *r, uint32_t ingress_port) {
    p4s_ctx *c = r->c;
    uint64_t S[P4G_SLOTS];
    memcpy(S, p4g_template, sizeof S);
    S[P4G_SM_INGRESS_PORT] = ingress_port;
    S[P4G_SM_PACKET_LENGTH] = r->len;
    S[P4G_SM_INGRESS_TS] = p4s_now_us(c);
    int64_t off = p4g_parse(c, S, r->data, r->len);
    if (off < 0) {
        p4s_parser_error(c, S[P4G_SM_PARSER_ERROR]);
        if (c->drop_rejected) return;
    } else {
        S[P4G_PAYLOAD] = (uint64_t)off;
    }
    p4g_verify_checksum(c, S);
    p4g_ingress(c, S);
    if (S[P4G_CLONE]) p4s_clone_i2e(r, S);
    uint64_t group = S[P4G_SM_MCAST_GRP];
    if (group) {
        int64_t at = p4s_pre_find(&c->groups, group);
        if (at < 0 || !c->groups.count[at]) {
            c->drops[P4S_DROP_GROUP_EMPTY]++;
            return;
        }
        S[P4G_SM_INSTANCE_TYPE] = P4S_REPLICATION;
        p4s_replicate(r, S, &c->groups, at, 0);
    } else if (S[P4G_SM_EGRESS_SPEC] == P4S_DROP_PORT) {
        c->drops[P4S_DROP_INGRESS]++;
    } else {
        S[P4G_SM_EGRESS_PORT] = S[P4G_SM_EGRESS_SPEC];
        p4s_egress(r, S, 0, 0);
    }
}

/* --- the interface ------------------------------------------------------------------------- */

int p4s_process(void *ctx, uint32_t ingress_port, const uint8_t *data, uint32_t len, p4s_out *out) {
    p4s_ctx *c = ctx;
    p4s_run r = {c, data, len, out, 0};
    out->n = 0;
    pthread_mutex_lock(&c->mu);
    c->touched_n = 0;
    p4s_ingress(&r, ingress_port);
    if (r.failed) {
        out->n = 0;
        c->drops[P4S_DROP_INTERNAL]++;
    }
    pthread_mutex_unlock(&c->mu);
    return r.failed ? -1 : 0;
}

void *p4s_new(uint64_t seed, int drop_rejected) {
    p4s_ctx *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&c->mu, &attr);
    pthread_mutexattr_destroy(&attr);
    p4s_tables_init();
    for (uint32_t i = 0; i < p4s_ntables; i++) {
        c->tables[i].nkeys = p4g_shape[i][0];
        c->tables[i].nargs = p4g_shape[i][1];
        c->tables[i].exact = p4g_shape[i][2];
    }
    c->rng = seed;
    c->drop_rejected = drop_rejected;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    c->start_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    return c;
}

void p4s_free(void *ctx) {
    p4s_ctx *c = ctx;
    for (uint32_t i = 0; i < p4s_ntables; i++) p4s_table_free(&c->tables[i]);
    p4s_pre_free(&c->groups);
    p4s_pre_free(&c->sessions);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

/* Stamp frames with `us` from now on (microseconds since the pipeline started), not the clock. */
void p4s_set_clock(void *ctx, uint64_t us) {
    ((p4s_ctx *)ctx)->clock_set = 1;
    ((p4s_ctx *)ctx)->clock_us = us;
}

void p4s_lock(void *ctx) { pthread_mutex_lock(&((p4s_ctx *)ctx)->mu); }
void p4s_unlock(void *ctx) { pthread_mutex_unlock(&((p4s_ctx *)ctx)->mu); }

void p4s_bind_register(void *ctx, uint32_t i, uint64_t *cells) { ((p4s_ctx *)ctx)->reg[i] = cells; }

void p4s_bind_counter(void *ctx, uint32_t i, uint64_t *packets, uint64_t *bytes) {
    ((p4s_ctx *)ctx)->cpackets[i] = packets;
    ((p4s_ctx *)ctx)->cbytes[i] = bytes;
}

static void *p4s_copy(const void *src, size_t size) {
    void *p = malloc(size ? size : 1);
    if (p && size) memcpy(p, src, size);
    return p;
}

/* Replace table `i`'s entries (in lookup order) and their direct counts. 0, or -1: no memory. */
int p4s_table_set(void *ctx, uint32_t i, uint32_t n, const uint64_t *keys, const uint64_t *masks,
                  const uint32_t *action, const uint64_t *args, const uint64_t *packets,
                  const uint64_t *bytes) {
    p4s_table *t = &((p4s_ctx *)ctx)->tables[i];
    p4s_table_free(t);
    size_t nk = (size_t)n * t->nkeys * 8, na = (size_t)n * t->nargs * 8;
    t->keys = p4s_copy(keys, nk);
    t->masks = p4s_copy(masks, nk);
    t->action = p4s_copy(action, (size_t)n * 4);
    t->args = p4s_copy(args, na);
    t->packets = p4s_copy(packets, (size_t)n * 8);
    t->bytes = p4s_copy(bytes, (size_t)n * 8);
    t->hit = calloc(n ? n : 1, 1);
    if (!t->keys || !t->masks || !t->action || !t->args || !t->packets || !t->bytes || !t->hit) {
        p4s_table_free(t);
        return -1;
    }
    t->n = n;
    if (t->exact && n) {
        uint32_t size = 16;
        while (size < 2 * n) size *= 2;
        t->index = calloc(size, sizeof(uint32_t));
        if (!t->index) {
            p4s_table_free(t);
            return -1;
        }
        t->index_size = size;
        for (uint32_t e = 0; e < n; e++) {
            uint32_t at = (uint32_t)p4s_key_hash(t->keys + (size_t)e * t->nkeys, t->nkeys) & (size - 1);
            while (t->index[at]) at = (at + 1) & (size - 1);
            t->index[at] = e + 1;
        }
    }
    return 0;
}

void p4s_table_default(void *ctx, uint32_t i, uint32_t action, const uint64_t *args,
                       uint64_t packets, uint64_t bytes) {
    p4s_table *t = &((p4s_ctx *)ctx)->tables[i];
    t->default_action = action;
    memcpy(t->default_args, args, t->nargs * sizeof(uint64_t));
    t->default_packets = packets;
    t->default_bytes = bytes;
}

/* Direct counts of table `i`: its entries' (in the order set), then the default's. */
void p4s_table_counts(void *ctx, uint32_t i, uint64_t *packets, uint64_t *bytes) {
    p4s_table *t = &((p4s_ctx *)ctx)->tables[i];
    memcpy(packets, t->packets, t->n * sizeof(uint64_t));
    memcpy(bytes, t->bytes, t->n * sizeof(uint64_t));
    packets[t->n] = t->default_packets;
    bytes[t->n] = t->default_bytes;
}

/* The hit flags of table `i`'s entries (tables with support_timeout), cleared as they are read. */
void p4s_table_hits(void *ctx, uint32_t i, uint8_t *hits) {
    p4s_table *t = &((p4s_ctx *)ctx)->tables[i];
    memcpy(hits, t->hit, t->n);
    memset(t->hit, 0, t->n);
}

void p4s_table_set_counts(void *ctx, uint32_t i, const uint64_t *packets, const uint64_t *bytes) {
    p4s_table *t = &((p4s_ctx *)ctx)->tables[i];
    memcpy(t->packets, packets, t->n * sizeof(uint64_t));
    memcpy(t->bytes, bytes, t->n * sizeof(uint64_t));
    t->default_packets = packets[t->n];
    t->default_bytes = bytes[t->n];
}

/* Replace the multicast groups (`which` 0) or clone sessions (1): `n` sorted ids, each with
   `count` replicas from `first`, and for sessions a truncation length. 0, or -1: no memory. */
int p4s_pre_set(void *ctx, int which, uint32_t n, const uint64_t *ids, const uint32_t *first,
                const uint32_t *count, const uint64_t *cut, uint32_t nreplicas,
                const uint64_t *port, const uint64_t *rid) {
    p4s_ctx *c = ctx;
    p4s_pre *p = which ? &c->sessions : &c->groups;
    p4s_pre_free(p);
    p->ids = p4s_copy(ids, (size_t)n * 8);
    p->first = p4s_copy(first, (size_t)n * 4);
    p->count = p4s_copy(count, (size_t)n * 4);
    p->cut = which ? p4s_copy(cut, (size_t)n * 8) : NULL;
    p->port = p4s_copy(port, (size_t)nreplicas * 8);
    p->rid = p4s_copy(rid, (size_t)nreplicas * 8);
    if (!p->ids || !p->first || !p->count || (which && !p->cut) || !p->port || !p->rid) {
        p4s_pre_free(p);
        return -1;
    }
    p->n = n;
    p->nreplicas = nreplicas;
    return 0;
}

/* The drop counts (P4S_DROPS of them) and the 256 parser error counts. */
void p4s_counts(void *ctx, uint64_t *drops, uint64_t *parser_errors) {
    p4s_ctx *c = ctx;
    memcpy(drops, c->drops, sizeof c->drops);
    memcpy(parser_errors, c->parser_errors, sizeof c->parser_errors);
}

/* The direct counter updates and ageing hits of the last frame as (table, entry or -1 for the
   default, packet length) triples (room for P4S_TOUCH_MAX); their number, above P4S_TOUCH_MAX
   if some were lost. The hit flags of the entries given are cleared: the caller records them. */
uint32_t p4s_touched(void *ctx, int64_t *triples) {
    p4s_ctx *c = ctx;
    uint32_t kept = c->touched_n < P4S_TOUCH_MAX ? c->touched_n : P4S_TOUCH_MAX;
    memcpy(triples, c->touched, kept * 3 * sizeof(int64_t));
    for (uint32_t k = 0; k < kept; k++) {
        p4s_table *t = &c->tables[c->touched[k][0]];
        int64_t e = c->touched[k][1];
        if (e >= 0 && (uint64_t)e < t->n) t->hit[e] = 0;
    }
    return c->touched_n;
}

/* One of the hash algorithms (0 crc16, 1 crc32, 2 csum16, 3 xor16, 4 identity: its low 64
   bits) over `n` bytes, as the generated code computes it. */
uint64_t p4s_hash(int algorithm, const uint8_t *d, uint32_t n) {
    p4s_tables_init();
    switch (algorithm) {
        case 0: return p4s_crc16(d, n);
        case 1: return p4s_crc32(d, n);
        case 2: return p4s_csum16(d, n);
        case 3: return p4s_xor16(d, n);
        default: return p4s_identity(d, n);
    }
}
