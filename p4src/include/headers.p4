/*
 * innet wire format: Ethernet / IPv4 / UDP (destination port 0x4E49) / innet header / LANES values.
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
const bit<4> TYPE_BOUNCE       = 5;  /* switch to own hosts: a contribution a busy slot refused */

/* innet header `flags` bits */
const bit<8> FLAG_WAN        = 0x01;  /* replicate along the source's tree */
const bit<8> FLAG_LOCAL      = 0x02;  /* merge at a member edge */
const bit<8> FLAG_RETRANSMIT = 0x04;  /* a resend (on a RESULT: the result emitted again) */
const bit<8> FLAG_REMOTE     = 0x08;  /* merge at member edges other than the source's own */

/* The island ids a group bitmap can hold. */
const bit<8> MAX_ISLANDS = 32;

/* Lanes: int32 values in one message (one chunk), fixed when the program is compiled:
 * -D LANES=32 (the default), 64, 128 or 256 (a 1 KB payload, like an FPGA aggregator's jumbo
 * chunks). The testbed passes it from its packet format (innet/packetformat.py, its defines()),
 * the same value its hosts' codec and its planner are given. */
#ifndef LANES
#define LANES 32
#endif

/* Every innet message has one size: the frame and the two length fields must say so. */
const bit<32> INNET_FRAME_BYTES = 58 + 4 * LANES;  /* 14 + 20 + 8 + 16 + 4 x LANES */
const bit<16> INNET_IPV4_LENGTH = 44 + 4 * LANES;  /* IPv4 total length: the frame less Ethernet */
const bit<16> INNET_UDP_LENGTH  = 24 + 4 * LANES;  /* UDP length: header, innet header, values */

/* Apply M(I) to every lane index, 00 .. LANES - 1, in 32s. */
#define LANES_000(M) \
    M(00) M(01) M(02) M(03) M(04) M(05) M(06) M(07) \
    M(08) M(09) M(10) M(11) M(12) M(13) M(14) M(15) \
    M(16) M(17) M(18) M(19) M(20) M(21) M(22) M(23) \
    M(24) M(25) M(26) M(27) M(28) M(29) M(30) M(31)
#define LANES_032(M) \
    M(32) M(33) M(34) M(35) M(36) M(37) M(38) M(39) \
    M(40) M(41) M(42) M(43) M(44) M(45) M(46) M(47) \
    M(48) M(49) M(50) M(51) M(52) M(53) M(54) M(55) \
    M(56) M(57) M(58) M(59) M(60) M(61) M(62) M(63)
#define LANES_064(M) \
    M(64) M(65) M(66) M(67) M(68) M(69) M(70) M(71) \
    M(72) M(73) M(74) M(75) M(76) M(77) M(78) M(79) \
    M(80) M(81) M(82) M(83) M(84) M(85) M(86) M(87) \
    M(88) M(89) M(90) M(91) M(92) M(93) M(94) M(95)
#define LANES_096(M) \
    M(96) M(97) M(98) M(99) M(100) M(101) M(102) M(103) \
    M(104) M(105) M(106) M(107) M(108) M(109) M(110) M(111) \
    M(112) M(113) M(114) M(115) M(116) M(117) M(118) M(119) \
    M(120) M(121) M(122) M(123) M(124) M(125) M(126) M(127)
#define LANES_128(M) \
    M(128) M(129) M(130) M(131) M(132) M(133) M(134) M(135) \
    M(136) M(137) M(138) M(139) M(140) M(141) M(142) M(143) \
    M(144) M(145) M(146) M(147) M(148) M(149) M(150) M(151) \
    M(152) M(153) M(154) M(155) M(156) M(157) M(158) M(159)
#define LANES_160(M) \
    M(160) M(161) M(162) M(163) M(164) M(165) M(166) M(167) \
    M(168) M(169) M(170) M(171) M(172) M(173) M(174) M(175) \
    M(176) M(177) M(178) M(179) M(180) M(181) M(182) M(183) \
    M(184) M(185) M(186) M(187) M(188) M(189) M(190) M(191)
#define LANES_192(M) \
    M(192) M(193) M(194) M(195) M(196) M(197) M(198) M(199) \
    M(200) M(201) M(202) M(203) M(204) M(205) M(206) M(207) \
    M(208) M(209) M(210) M(211) M(212) M(213) M(214) M(215) \
    M(216) M(217) M(218) M(219) M(220) M(221) M(222) M(223)
#define LANES_224(M) \
    M(224) M(225) M(226) M(227) M(228) M(229) M(230) M(231) \
    M(232) M(233) M(234) M(235) M(236) M(237) M(238) M(239) \
    M(240) M(241) M(242) M(243) M(244) M(245) M(246) M(247) \
    M(248) M(249) M(250) M(251) M(252) M(253) M(254) M(255)
#if LANES == 32
#define FOR_EACH_LANE(M) LANES_000(M)
#elif LANES == 64
#define FOR_EACH_LANE(M) LANES_000(M) LANES_032(M)
#elif LANES == 128
#define FOR_EACH_LANE(M) LANES_000(M) LANES_032(M) LANES_064(M) LANES_096(M)
#elif LANES == 256
#define FOR_EACH_LANE(M) LANES_000(M) LANES_032(M) LANES_064(M) LANES_096(M) \
                         LANES_128(M) LANES_160(M) LANES_192(M) LANES_224(M)
#else
#error "LANES must be 32, 64, 128 or 256"
#endif

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

/* LANES values, int32 two's complement, big-endian: 4 x LANES bytes. */
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
    bit<1>  bounce;         /* the host copies (replica id 1) become a BOUNCE: slot busy */
    bit<32> seen;           /* the RESULT's bitmap */
    FOR_EACH_LANE(INNET_SUM)
}

#endif
