/*
 * innet wire format: Ethernet / IPv4 / UDP (destination port 0x4E49) / innet header / 32 values.
 * docs/protocol.md describes every field; this file only declares them.
 */
#ifndef INNET_HEADERS_P4
#define INNET_HEADERS_P4

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  IPPROTO_UDP    = 17;
const bit<16> INNET_UDP_PORT = 0x4E49;  /* 20041 */

const bit<4> INNET_VERSION = 1;

/* innet header `type` */
const bit<4> TYPE_CONTRIBUTION = 1;
const bit<4> TYPE_RESULT       = 2;
const bit<4> TYPE_NACK         = 3;
const bit<4> TYPE_RECOVER      = 4;

/* innet header `flags` bits */
const bit<8> FLAG_WAN        = 0x01;  /* replicate along the source's tree */
const bit<8> FLAG_LOCAL      = 0x02;  /* merge at a member edge */
const bit<8> FLAG_RETRANSMIT = 0x04;  /* a resend (on a RESULT: the result emitted again) */
const bit<8> FLAG_REMOTE     = 0x08;  /* merge at member edges other than the source's own */

/* The island ids a group bitmap can hold. */
const bit<8> MAX_ISLANDS = 32;

/* Every innet message has one size: the frame and the two length fields must say so. */
const bit<32> INNET_FRAME_BYTES = 186;  /* 14 + 20 + 8 + 16 + 128 */
const bit<16> INNET_IPV4_LENGTH = 172;  /* IPv4 total length: the frame less Ethernet */
const bit<16> INNET_UDP_LENGTH  = 152;  /* UDP length: header, innet header and values */

/* Apply M(I) to every lane index 00..31. */
#define FOR_EACH_LANE(M) \
    M(00) M(01) M(02) M(03) M(04) M(05) M(06) M(07) \
    M(08) M(09) M(10) M(11) M(12) M(13) M(14) M(15) \
    M(16) M(17) M(18) M(19) M(20) M(21) M(22) M(23) \
    M(24) M(25) M(26) M(27) M(28) M(29) M(30) M(31)

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> length;
    bit<16> checksum;
}

/* 16 bytes. */
header innet_t {
    bit<4>  version;
    bit<4>  type;
    bit<8>  flags;
    bit<16> job;
    bit<16> round;
    bit<8>  group;
    bit<8>  src;
    bit<32> chunk;
    bit<32> bitmap;
}

/* N = 32 values, int32 two's complement, big-endian: 128 bytes. */
#define INNET_VALUE(I) bit<32> v##I;
header values_t {
    FOR_EACH_LANE(INNET_VALUE)
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t     ipv4;
    udp_t      udp;
    innet_t    innet;
    values_t   values;
}

/* Island roles, from the membership table. */
const bit<2> ROLE_UNKNOWN = 0;
const bit<2> ROLE_MEMBER  = 1;
const bit<2> ROLE_TRANSIT = 2;
const bit<2> ROLE_RELAY   = 3;  /* a member whose edge replicates but does not merge */

#define INNET_SUM(I) bit<32> sum##I;
struct metadata_t {
    bit<2>  role;
    bit<32> expected;       /* member or relay: bitmap of the group's islands */
    bit<32> my_bit;         /* member or relay: this island's bit */
    bit<16> local_grp;      /* member or relay: multicast group of the island's host ports */
    bit<48> stale_us;       /* member: how long a slot it claims may stay incomplete */
    bit<32> streams;        /* port_sources: islands whose streams may enter on this port */
    bit<32> replays;        /* port_sources: islands the own leader may replay here, no WAN */
    bit<1>  on_tree;        /* WAN flag and a tree entry for (job, round, group, src) */
    bit<16> wan_grp;
    bit<16> wan_local_grp;
    bit<1>  emit;           /* the host copies (replica id 1) become a RESULT */
    bit<1>  resent;         /* ... emitted again for a leader that missed it */
    bit<32> seen;           /* the RESULT's bitmap */
    FOR_EACH_LANE(INNET_SUM)
}

#endif
