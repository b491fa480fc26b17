/*
 * innet edge switch: multicast along per-source trees and in-line aggregation of 32 x int32
 * chunks into a pool of slots, plus plain IPv4 routing for everything else.
 *
 * The protocol, the slot state machine and the control-plane contract are in
 * docs/protocol.md. Standard v1model only: compiles with p4c-bm2-ss for simple_switch_grpc.
 * Registers are touched by the data plane alone; statistics are the `stats` counter.
 *
 * Compile-time parameters: SLOTS (a power of two, default 1024) slots per bank; two banks,
 * so each slot register holds 2 * SLOTS cells. LOG_SLOTS is derived when not given.
 */
#include <core.p4>
#include <v1model.p4>

#include "include/headers.p4"

#ifndef SLOTS
#define SLOTS 1024
#endif

#ifndef LOG_SLOTS
#if SLOTS == 1
#define LOG_SLOTS 0
#elif SLOTS == 2
#define LOG_SLOTS 1
#elif SLOTS == 4
#define LOG_SLOTS 2
#elif SLOTS == 8
#define LOG_SLOTS 3
#elif SLOTS == 16
#define LOG_SLOTS 4
#elif SLOTS == 32
#define LOG_SLOTS 5
#elif SLOTS == 64
#define LOG_SLOTS 6
#elif SLOTS == 128
#define LOG_SLOTS 7
#elif SLOTS == 256
#define LOG_SLOTS 8
#elif SLOTS == 512
#define LOG_SLOTS 9
#elif SLOTS == 1024
#define LOG_SLOTS 10
#elif SLOTS == 2048
#define LOG_SLOTS 11
#elif SLOTS == 4096
#define LOG_SLOTS 12
#elif SLOTS == 8192
#define LOG_SLOTS 13
#elif SLOTS == 16384
#define LOG_SLOTS 14
#elif SLOTS == 32768
#define LOG_SLOTS 15
#elif SLOTS == 65536
#define LOG_SLOTS 16
#else
#error "SLOTS must be a power of two from 1 to 65536"
#endif
#endif

#if (1 << LOG_SLOTS) != SLOTS
#error "LOG_SLOTS does not match SLOTS: SLOTS must be 2 ** LOG_SLOTS"
#endif

/* Cells of every slot register: two banks of SLOTS. */
#define CELLS (2 * SLOTS)

/* Indices of the `stats` counter (docs/protocol.md, "Counters"). */
const bit<32> STAT_CONTRIBUTION    = 0;
const bit<32> STAT_COMPLETED       = 1;
const bit<32> STAT_DUPLICATE       = 2;
const bit<32> STAT_SLOT_CONFLICT   = 3;
const bit<32> STAT_MALFORMED       = 4;
const bit<32> STAT_UNKNOWN         = 5;
const bit<32> STAT_NOT_MEMBER      = 6;
const bit<32> STAT_RESULT_RESENT   = 7;
const bit<32> STAT_NACK_OR_RECOVER = 8;
const bit<32> STAT_IPV4_FORWARDED  = 9;
const bit<32> STAT_DROPPED_OTHER   = 10;
const bit<32> STAT_REPLICATED      = 11;
const bit<32> STAT_STALE           = 12;
const bit<32> STAT_SPOOFED         = 13;
#define STATS_SIZE 14

parser InnetParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.fragOffset, hdr.ipv4.protocol) {
            (5, 0, IPPROTO_UDP): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dstPort) {
            INNET_UDP_PORT: parse_innet;
            default: accept;
        }
    }
    state parse_innet {
        packet.extract(hdr.innet);
        packet.extract(hdr.values);
        transition accept;
    }
}

control InnetVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

/* One lane of a merge or claim: lane = (lane & keep) + value, kept in metadata for the RESULT. */
#define LANE_REGISTER(I) register<bit<32>>(CELLS) lane##I;
#define LANE_UPDATE(I)                            \
    lane##I.read(lane, index);                    \
    lane = (lane & keep) + hdr.values.v##I;       \
    lane##I.write(index, lane);                   \
    meta.sum##I = lane;
#define LANE_READ(I) lane##I.read(meta.sum##I, index);

control InnetIngress(inout headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    counter(STATS_SIZE, CounterType.packets_and_bytes) stats;

    /* The slots: tag (ctx, chunk), contributors seen, contributors expected, the time
     * (ingress_global_timestamp, microseconds) after which an incomplete claim may be claimed
     * over, LANES lanes. */
    register<bit<32>>(CELLS) slot_chunk;
    register<bit<40>>(CELLS) slot_ctx;
    register<bit<32>>(CELLS) slot_seen;
    register<bit<32>>(CELLS) slot_expected;
    register<bit<48>>(CELLS) slot_deadline;
    FOR_EACH_LANE(LANE_REGISTER)

    action drop() {
        mark_to_drop(standard_metadata);
    }

    /* --- IPv4 routing for everything that is not innet ----------------------------------- */

    action forward(bit<9> port, bit<48> dmac) {
        standard_metadata.egress_spec = port;
        hdr.ethernet.dstAddr = dmac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { forward; drop; }
        default_action = drop();
        size = 1024;
    }

    /* --- innet -------------------------------------------------------------------------- */

    /* `stale_us`: a slot this group claims and leaves incomplete for longer may be claimed
     * over by another chunk (docs/protocol.md, "Stale slots"). */
    action member(bit<32> expected, bit<32> my_bit, bit<16> local_grp, bit<32> stale_us) {
        meta.role = ROLE_MEMBER;
        meta.expected = expected;
        meta.my_bit = my_bit;
        meta.local_grp = local_grp;
        meta.stale_us = (bit<48>) stale_us;
    }

    /* The `multicast` network: the island is a member, but its edge replicates contributions to
     * the hosts as it does NACKs and RECOVERs, and never merges; the hosts sum. */
    action relay(bit<32> expected, bit<32> my_bit, bit<16> local_grp) {
        meta.role = ROLE_RELAY;
        meta.expected = expected;
        meta.my_bit = my_bit;
        meta.local_grp = local_grp;
    }

    action transit() {
        meta.role = ROLE_TRANSIT;
    }

    action unknown() {
        meta.role = ROLE_UNKNOWN;
    }

    table membership {
        key = {
            hdr.innet.job: exact;
            hdr.innet.round: exact;
            hdr.innet.group: exact;
        }
        actions = { member; relay; transit; @defaultonly unknown; }
        default_action = unknown();
        size = 1024;
    }

    action replicate(bit<16> wan_grp, bit<16> wan_local_grp) {
        meta.on_tree = 1;
        meta.wan_grp = wan_grp;
        meta.wan_local_grp = wan_local_grp;
    }

    table tree {
        key = {
            hdr.innet.job: exact;
            hdr.innet.round: exact;
            hdr.innet.group: exact;
            hdr.innet.src: exact;
        }
        actions = { replicate; @defaultonly NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    /* Which sources may enter on a port: `streams`, the islands whose trees reach this switch
     * through it (at a source's own edge: its host ports); `replays`, at a merging member's
     * host ports, the other members, whose contributions its leader replays to heal a slot
     * (CONTRIBUTION without WAN). A miss: no source may enter here. */
    action sources(bit<32> streams, bit<32> replays) {
        meta.streams = streams;
        meta.replays = replays;
    }

    table port_sources {
        key = {
            hdr.innet.job: exact;
            hdr.innet.round: exact;
            hdr.innet.group: exact;
            standard_metadata.ingress_port: exact;
        }
        actions = { sources; @defaultonly NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    apply {
        /* Anything the parser refused or the IPv4 checksum condemns, whatever it carried. */
        if (standard_metadata.parser_error != error.NoError
                || standard_metadata.checksum_error == 1
                || (hdr.ipv4.isValid() && hdr.ipv4.version != 4)) {
            stats.count(STAT_MALFORMED);
            drop();
            return;
        }
        if (!hdr.ipv4.isValid() || hdr.ipv4.ihl != 5) {
            stats.count(STAT_DROPPED_OTHER);  /* not IPv4 (hosts use static ARP), or options */
            drop();
            return;
        }
        if (!hdr.innet.isValid()) {
            if (hdr.ipv4.ttl <= 1) {
                stats.count(STAT_DROPPED_OTHER);
                drop();
                return;
            }
            switch (ipv4_lpm.apply().action_run) {
                forward: { stats.count(STAT_IPV4_FORWARDED); }
                default: { stats.count(STAT_DROPPED_OTHER); }
            }
            return;
        }

        /* innet: a frame of innet's one size, its lengths saying so, and a well-formed header
         * of a type a switch accepts from the wire. */
        if (standard_metadata.packet_length != INNET_FRAME_BYTES
                || hdr.ipv4.totalLen != INNET_IPV4_LENGTH
                || hdr.udp.length != INNET_UDP_LENGTH
                || hdr.innet.version != INNET_VERSION
                || hdr.innet.type == 0 || hdr.innet.type > TYPE_RECOVER
                || hdr.innet.type == TYPE_RESULT
                || hdr.innet.src >= MAX_ISLANDS) {
            stats.count(STAT_MALFORMED);
            drop();
            return;
        }
        drop();  /* consumed unless a multicast group is chosen below */

        membership.apply();
        if (meta.role == ROLE_UNKNOWN) {
            stats.count(STAT_UNKNOWN);
            return;
        }
        bit<32> src_bit = 32w1 << hdr.innet.src;
        bool in_group = meta.role == ROLE_MEMBER || meta.role == ROLE_RELAY;
        if (in_group && (src_bit & meta.expected) == 0) {
            stats.count(STAT_NOT_MEMBER);
            return;
        }
        /* The source must enter where its island's traffic enters (the port -> island map). */
        port_sources.apply();
        bool replay = hdr.innet.type == TYPE_CONTRIBUTION && (hdr.innet.flags & FLAG_WAN) == 0
            && meta.role == ROLE_MEMBER && (src_bit & meta.replays) != 0;
        if ((src_bit & meta.streams) == 0 && !replay) {
            stats.count(STAT_SPOOFED);
            return;
        }
        if ((hdr.innet.flags & FLAG_WAN) != 0) {
            tree.apply();
        }

        if (hdr.innet.type == TYPE_NACK || hdr.innet.type == TYPE_RECOVER
                || meta.role == ROLE_RELAY) {
            /* NACK or RECOVER, or any packet of a group that is not merged: replicated like the
             * source's stream; the hosts of every member but the source's own get a copy. */
            if (hdr.innet.type == TYPE_CONTRIBUTION) {
                stats.count(STAT_REPLICATED);
            } else {
                stats.count(STAT_NACK_OR_RECOVER);
            }
            bool to_hosts = in_group && src_bit != meta.my_bit;
            if (meta.on_tree == 1) {
                standard_metadata.mcast_grp = to_hosts ? meta.wan_local_grp : meta.wan_grp;
            } else if (to_hosts) {
                standard_metadata.mcast_grp = meta.local_grp;
            } else {
                stats.count(STAT_DROPPED_OTHER);
            }
            return;
        }

        /* CONTRIBUTION: the slot operation at a member edge asked to merge. */
        bool accounted = false;
        bool merge_here = (hdr.innet.flags & FLAG_LOCAL) != 0
            || ((hdr.innet.flags & FLAG_REMOTE) != 0 && src_bit != meta.my_bit);
        if (meta.role == ROLE_MEMBER && merge_here) {
            accounted = true;
            bit<32> chunk = hdr.innet.chunk;
            bit<32> index = ((chunk >> LOG_SLOTS) & 1) * SLOTS + (chunk & (SLOTS - 1));
            bit<40> ctx = hdr.innet.job ++ hdr.innet.round ++ hdr.innet.group;

            bit<48> now = standard_metadata.ingress_global_timestamp;

            bit<40> s_ctx;
            bit<32> s_chunk;
            bit<32> s_seen;
            bit<32> s_expected;
            bit<48> s_deadline;
            slot_ctx.read(s_ctx, index);
            slot_chunk.read(s_chunk, index);
            slot_seen.read(s_seen, index);
            slot_expected.read(s_expected, index);
            slot_deadline.read(s_deadline, index);
            bool free = s_seen == 0;
            bool complete = !free && s_seen == s_expected;
            bool same_ctx = !free && s_ctx == ctx;
            bool stale = !free && !complete && now > s_deadline;

            bool update = false;
            bool claim = false;
            bit<32> keep = 0;  /* all ones: merge into the lanes; zero: claim (overwrite) */
            if (same_ctx && chunk == s_chunk) {
                if ((s_seen & src_bit) != 0) {
                    stats.count(STAT_DUPLICATE);
                    if (complete && src_bit == meta.my_bit) {
                        meta.emit = 1;  /* our leader missed the result: send it again */
                        meta.resent = 1;
                        stats.count(STAT_RESULT_RESENT);
                    }
                } else {
                    update = true;
                    keep = 0xFFFFFFFF;
                    s_seen = s_seen | src_bit;
                }
            } else if (stale) {
                /* Another chunk at a slot held incomplete past its bound: a stray, or a chunk
                 * given up on. Its contributions are dropped; their sources recover. */
                stats.count(STAT_STALE);
                claim = true;
            } else if (same_ctx && chunk < s_chunk) {
                /* A late copy of a chunk this slot has moved past: the island has its result. */
                stats.count(STAT_DUPLICATE);
            } else if (free || complete) {
                claim = true;
            } else {
                /* Busy with another chunk: never mixed. The contribution goes back to the
                 * island's hosts as a BOUNCE, for its leader to replay once the slot is free. */
                stats.count(STAT_SLOT_CONFLICT);
                meta.bounce = 1;
            }
            if (claim) {
                update = true;
                s_seen = src_bit;
                s_expected = meta.expected;
                slot_ctx.write(index, ctx);
                slot_chunk.write(index, chunk);
                slot_expected.write(index, s_expected);
                slot_deadline.write(index, now + meta.stale_us);
            }

            bit<32> lane;
            if (update) {
                slot_seen.write(index, s_seen);
                FOR_EACH_LANE(LANE_UPDATE)
                stats.count(STAT_CONTRIBUTION);
                if (s_seen == s_expected) {
                    meta.emit = 1;
                    stats.count(STAT_COMPLETED);
                }
            } else if (meta.emit == 1) {
                FOR_EACH_LANE(LANE_READ)
            }
            meta.seen = s_seen;
        }

        bool host_copies = meta.emit == 1 || meta.bounce == 1;
        if (meta.on_tree == 1) {
            standard_metadata.mcast_grp = host_copies ? meta.wan_local_grp : meta.wan_grp;
        } else if (host_copies) {
            standard_metadata.mcast_grp = meta.local_grp;
        } else if (!accounted) {
            stats.count(STAT_DROPPED_OTHER);  /* neither merged nor replicated here */
        }
    }
}

#define RESULT_LANE(I) hdr.values.v##I = meta.sum##I;

control InnetEgress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    /* A host copy (replica id 1): address it to the host behind this port. */
    /* `gateway` is the edge's own address on the host's subnet: a host drops a packet that
       claims to come from its own address, which a contribution's source would be. */
    action to_host(bit<48> mac, bit<32> ip, bit<32> gateway) {
        hdr.ethernet.dstAddr = mac;
        hdr.ipv4.dstAddr = ip;
        hdr.ipv4.srcAddr = gateway;
        hdr.udp.checksum = 0;
    }

    table host_port {
        key = { standard_metadata.egress_port: exact; }
        actions = { to_host; @defaultonly NoAction; }
        default_action = NoAction();
        size = 256;
    }

    apply {
        if (!hdr.innet.isValid()) {
            return;
        }
        if (standard_metadata.egress_rid == 0) {
            /* A WAN copy leaves unchanged, never back out of the port it came in on. */
            if (standard_metadata.egress_port == standard_metadata.ingress_port) {
                mark_to_drop(standard_metadata);
            }
            return;
        }
        if (!host_port.apply().hit) {
            mark_to_drop(standard_metadata);
            return;
        }
        if (meta.emit == 1 && hdr.innet.type == TYPE_CONTRIBUTION) {
            hdr.innet.type = TYPE_RESULT;
            hdr.innet.flags = meta.resent == 1 ? FLAG_RETRANSMIT : 8w0;
            hdr.innet.bitmap = meta.seen;
            FOR_EACH_LANE(RESULT_LANE)
        } else if (meta.bounce == 1 && hdr.innet.type == TYPE_CONTRIBUTION) {
            hdr.innet.type = TYPE_BOUNCE;  /* src, chunk and values as they came */
        }
    }
}

control InnetComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control InnetDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.udp);
        packet.emit(hdr.innet);
        packet.emit(hdr.values);
    }
}

V1Switch(InnetParser(), InnetVerifyChecksum(), InnetIngress(), InnetEgress(),
         InnetComputeChecksum(), InnetDeparser()) main;
