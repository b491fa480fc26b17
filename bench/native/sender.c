/*
 * Traffic generator for bench/forwarding.py: pre-built Ethernet/IPv4/UDP frames sent with
 * sendmmsg(2) on an AF_PACKET socket, so the sender outpaces what it measures.
 *
 *   sender --dst-mac M --src-mac M --src-ip A --dst-ip A [--dport P] [--payload N]
 *          [--agg-slots N] [--seconds S | --count N] [--rate FPS] [--batch N]
 *          (--interface IF | --print N)
 *
 * Frames carry `payload` bytes of UDP payload (IPv4 header checksum set, UDP checksum 0). With
 * --agg-slots N the payload is an aggregation header as agg32.p4 parses it: frame i carries
 * slot (i % 1024) % N, 0 contributions and lane k holding k + 1 (big-endian int32); without it, zeros.
 * --print N writes the first N frames in hex, one a line, and sends nothing. Otherwise frames
 * go out of --interface for --seconds (default 1) or until --count are sent, at most --rate
 * frames/s when given; then one JSON line: {"sent": n, "seconds": s, "errors": e}.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_BATCH 1024
#define RING 1024 /* distinct frames built (slots cycle through them) */
#define HEADERS (14 + 20 + 8)
#define AGG_LANES 32
#define AGG_BYTES (4 + 4 * AGG_LANES)
#define MAX_PAYLOAD 9000

struct options {
    uint8_t dst_mac[6], src_mac[6];
    uint32_t src_ip, dst_ip;
    unsigned dport, payload, agg_slots, batch, print;
    double seconds, rate;
    unsigned long long count;
    const char *interface;
    int have_dst_mac, have_src_mac, have_src_ip, have_dst_ip;
};

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "sender: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(2);
}

static void parse_mac(const char *text, uint8_t mac[6])
{
    unsigned b[6];
    char end;
    if (sscanf(text, "%x:%x:%x:%x:%x:%x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &end) != 6)
        die("not a MAC address (write aa:bb:cc:dd:ee:ff)", text);
    for (int i = 0; i < 6; i++) {
        if (b[i] > 255)
            die("not a MAC address (write aa:bb:cc:dd:ee:ff)", text);
        mac[i] = (uint8_t)b[i];
    }
}

static uint32_t parse_ip(const char *text)
{
    struct in_addr addr;
    if (inet_pton(AF_INET, text, &addr) != 1)
        die("not an IPv4 address", text);
    return ntohl(addr.s_addr);
}

static double parse_number(const char *text, const char *name, double low, double high)
{
    char *end;
    errno = 0;
    double value = strtod(text, &end);
    if (errno || end == text || *end || value < low || value > high) {
        fprintf(stderr, "sender: --%s %s: expected a number from %g to %g\n", name, text, low,
                high);
        exit(2);
    }
    return value;
}

static void put16(uint8_t *p, unsigned v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
    put16(p, v >> 16);
    put16(p + 2, v & 0xffff);
}

static unsigned ipv4_checksum(const uint8_t *header)
{
    uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2)
        sum += (uint32_t)header[i] << 8 | header[i + 1];
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return ~sum & 0xffff;
}

/* Frame number `index` of the run into `frame` (HEADERS + payload bytes). */
static void build_frame(const struct options *o, unsigned index, uint8_t *frame)
{
    unsigned length = HEADERS + o->payload;
    memset(frame, 0, length);
    memcpy(frame, o->dst_mac, 6);
    memcpy(frame + 6, o->src_mac, 6);
    put16(frame + 12, 0x0800);
    uint8_t *ip = frame + 14;
    ip[0] = 0x45;
    put16(ip + 2, 20 + 8 + o->payload);
    ip[8] = 64;
    ip[9] = 17;
    put32(ip + 12, o->src_ip);
    put32(ip + 16, o->dst_ip);
    put16(ip + 10, ipv4_checksum(ip));
    uint8_t *udp = ip + 20;
    put16(udp, 0x4000);
    put16(udp + 2, o->dport);
    put16(udp + 4, 8 + o->payload);
    if (o->agg_slots) {
        uint8_t *agg = udp + 8;
        put16(agg, index % o->agg_slots);
        for (uint32_t lane = 0; lane < AGG_LANES; lane++)
            put32(agg + 4 + 4 * lane, lane + 1);
    }
}

static void parse_options(int argc, char **argv, struct options *o)
{
    static const struct option longs[] = {
        {"dst-mac", required_argument, 0, 'd'}, {"src-mac", required_argument, 0, 's'},
        {"src-ip", required_argument, 0, 'S'},  {"dst-ip", required_argument, 0, 'D'},
        {"dport", required_argument, 0, 'p'},   {"payload", required_argument, 0, 'l'},
        {"agg-slots", required_argument, 0, 'a'}, {"seconds", required_argument, 0, 't'},
        {"count", required_argument, 0, 'c'},   {"rate", required_argument, 0, 'r'},
        {"batch", required_argument, 0, 'b'},   {"interface", required_argument, 0, 'i'},
        {"print", required_argument, 0, 'P'},   {0, 0, 0, 0},
    };
    *o = (struct options){.dport = 0x4000, .payload = 18, .batch = 64, .seconds = 1.0};
    int c;
    while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (c) {
        case 'd': parse_mac(optarg, o->dst_mac); o->have_dst_mac = 1; break;
        case 's': parse_mac(optarg, o->src_mac); o->have_src_mac = 1; break;
        case 'S': o->src_ip = parse_ip(optarg); o->have_src_ip = 1; break;
        case 'D': o->dst_ip = parse_ip(optarg); o->have_dst_ip = 1; break;
        case 'p': o->dport = (unsigned)parse_number(optarg, "dport", 0, 65535); break;
        case 'l': o->payload = (unsigned)parse_number(optarg, "payload", 0, MAX_PAYLOAD); break;
        case 'a': o->agg_slots = (unsigned)parse_number(optarg, "agg-slots", 1, 65536); break;
        case 't': o->seconds = parse_number(optarg, "seconds", 0.001, 3600); break;
        case 'c': o->count = (unsigned long long)parse_number(optarg, "count", 1, 1e15); break;
        case 'r': o->rate = parse_number(optarg, "rate", 1, 1e9); break;
        case 'b': o->batch = (unsigned)parse_number(optarg, "batch", 1, MAX_BATCH); break;
        case 'i': o->interface = optarg; break;
        case 'P': o->print = (unsigned)parse_number(optarg, "print", 1, 1e6); break;
        default: die("unknown option (see the comment at the top of sender.c)", NULL);
        }
    }
    if (optind < argc)
        die("unexpected argument", argv[optind]);
    if (!o->have_dst_mac || !o->have_src_mac || !o->have_src_ip || !o->have_dst_ip)
        die("--dst-mac, --src-mac, --src-ip and --dst-ip are all required", NULL);
    if (o->agg_slots && o->payload < AGG_BYTES)
        die("--agg-slots needs --payload of at least 132 (slot, contributions, 32 lanes)", NULL);
    if (!o->print && !o->interface)
        die("give --interface to send on, or --print N to show frames", NULL);
}

static int open_socket(const char *name)
{
    unsigned ifindex = if_nametoindex(name);
    if (!ifindex)
        die("no such interface in this network namespace", name);
    int fd = socket(AF_PACKET, SOCK_RAW, 0); /* protocol 0: send only, receive nothing */
    if (fd < 0)
        die("cannot open an AF_PACKET socket (needs root or CAP_NET_RAW)", strerror(errno));
    int size = 4 << 20;
    if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof size) < 0)
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    struct sockaddr_ll address = {.sll_family = AF_PACKET, .sll_ifindex = (int)ifindex};
    if (bind(fd, (struct sockaddr *)&address, sizeof address) < 0)
        die("cannot bind the socket to the interface", strerror(errno));
    return fd;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void pause_until(double when)
{
    double wait = when - now_s();
    if (wait <= 0)
        return;
    struct timespec t = {.tv_sec = (time_t)wait, .tv_nsec = (long)((wait - (time_t)wait) * 1e9)};
    nanosleep(&t, NULL);
}

static void send_frames(const struct options *o, uint8_t (*frames)[HEADERS + MAX_PAYLOAD])
{
    int fd = open_socket(o->interface);
    static struct mmsghdr messages[MAX_BATCH];
    static struct iovec vectors[MAX_BATCH];
    unsigned length = HEADERS + o->payload;
    unsigned long long sent = 0, errors = 0, limit = o->count ? o->count : ~0ULL;
    double start = now_s(), end = o->count ? 1e300 : start + o->seconds;
    for (double now = start; now < end && sent < limit; now = now_s()) {
        unsigned n = o->batch;
        if (o->rate > 0) {
            double due = (now - start) * o->rate - (double)sent;
            if (due < 1) {
                pause_until(start + ((double)sent + 1) / o->rate);
                continue;
            }
            n = due < n ? (unsigned)due : n;
        }
        if (limit - sent < n)
            n = (unsigned)(limit - sent);
        for (unsigned i = 0; i < n; i++) {
            vectors[i] = (struct iovec){frames[(sent + i) % RING], length};
            messages[i].msg_hdr = (struct msghdr){.msg_iov = &vectors[i], .msg_iovlen = 1};
        }
        int done = sendmmsg(fd, messages, n, 0);
        if (done < 0) {
            if (errno != ENOBUFS && errno != EAGAIN && errno != EINTR)
                die("sendmmsg failed", strerror(errno));
            errors++;
            continue;
        }
        sent += (unsigned)done;
    }
    printf("{\"sent\": %llu, \"seconds\": %.6f, \"errors\": %llu}\n", sent, now_s() - start,
           errors);
    close(fd);
}

int main(int argc, char **argv)
{
    struct options o;
    parse_options(argc, argv, &o);
    static uint8_t frames[RING][HEADERS + MAX_PAYLOAD];
    for (unsigned i = 0; i < RING; i++)
        build_frame(&o, i, frames[i]);
    if (o.print) {
        uint8_t frame[HEADERS + MAX_PAYLOAD];
        for (unsigned i = 0; i < o.print; i++) {
            build_frame(&o, i, frame);
            for (unsigned b = 0; b < HEADERS + o.payload; b++)
                printf("%02x", frame[b]);
            putchar('\n');
        }
        return 0;
    }
    send_frames(&o, frames);
    return 0;
}
