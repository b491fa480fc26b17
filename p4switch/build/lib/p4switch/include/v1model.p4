/*
 * p4switch v1model library: the v1model architecture as p4switch implements it.
 * Written for p4switch. Names, field widths and signatures follow the v1model architecture
 * (as BMv2 simple_switch runs it) so that programs written for it compile unchanged; what
 * p4switch does not implement is declared with @p4switch_unsupported, so that using it is
 * refused with a clear message rather than reported as an unknown name.
 */
#ifndef _V1_MODEL_P4_
#define _V1_MODEL_P4_

#include <core.p4>

#define V1MODEL_VERSION 20200408

/* Declared so that tables using them are refused by name; p4switch does not implement them. */
match_kind {
    range,
    optional,
    selector
}

@metadata @name("standard_metadata")
struct standard_metadata_t {
    bit<9>  ingress_port;
    bit<9>  egress_spec;       /* set in ingress; 511 drops the packet */
    bit<9>  egress_port;       /* read-only, in egress */
    bit<32> instance_type;     /* 0 normal, 1 ingress clone, 2 egress clone, 5 replication */
    bit<32> packet_length;
    bit<32> enq_timestamp;
    bit<19> enq_qdepth;
    bit<32> deq_timedelta;
    bit<19> deq_qdepth;
    bit<48> ingress_global_timestamp;   /* microseconds since the pipeline started */
    bit<48> egress_global_timestamp;
    bit<16> mcast_grp;         /* set in ingress; non-zero multicasts the packet */
    bit<16> egress_rid;        /* the replica's instance, in egress */
    bit<1>  checksum_error;
    error   parser_error;
    bit<3>  priority;
}

enum CounterType {
    packets,
    bytes,
    packets_and_bytes
}

enum MeterType {
    packets,
    bytes
}

enum HashAlgorithm {
    crc32,
    crc32_custom,
    crc16,
    crc16_custom,
    random,
    identity,
    csum16,
    xor16
}

/* An array of counters, indexed from the data plane. */
extern counter {
    counter(bit<32> size, CounterType type);
    void count(in bit<32> index);
}

/* A counter per table entry, attached with the table property `counters = ...`. */
extern direct_counter {
    direct_counter(CounterType type);
    void count();
}

/* An array of values the data plane reads and writes. */
extern register<T> {
    register(bit<32> size);
    void read(out T result, in bit<32> index);
    void write(in bit<32> index, in T value);
}

/* Two-rate three-color meters: the color is 0 (green), 1 (yellow) or 2 (red). */
extern meter {
    meter(bit<32> size, MeterType type);
    void execute_meter<T>(in bit<32> index, out T result);
}

extern direct_meter<T> {
    direct_meter(MeterType type);
    void read(out T result);
}

/* Where a table's `implementation` takes its actions: members, and (a selector) groups of
   members, one chosen by a hash of the table's `selector` keys. */
extern action_profile {
    action_profile(bit<32> size);
}

extern action_selector {
    action_selector(HashAlgorithm algorithm, bit<32> size, bit<32> outputWidth);
}

/* A uniformly distributed value in lo..hi. */
extern void random<T>(out T result, in T lo, in T hi);

/* Send data (a struct: its type names the digest) to the controller after ingress. */
extern void digest<T>(in bit<32> receiver, in T data);

/* Drop the packet at the end of the current control: egress_spec = 511, mcast_grp = 0. */
extern void mark_to_drop(inout standard_metadata_t standard_metadata);

/* result = base + hash(data) % max (result = base when max is 0). */
extern void hash<O, T, D, M>(out O result, in HashAlgorithm algo, in T base, in D data, in M max);

enum CloneType {
    I2E,
    E2E
}

@p4switch_unsupported
extern void resubmit<T>(in T data);
extern void resubmit_preserving_field_list(bit<8> index);
@p4switch_unsupported
extern void recirculate<T>(in T data);
extern void recirculate_preserving_field_list(bit<8> index);

/* Send a copy of the packet to the ports of clone session `session`. */
extern void clone(in CloneType type, in bit<32> session);
@p4switch_unsupported
extern void clone3<T>(in CloneType type, in bit<32> session, in T data);
/* As clone, keeping the user metadata fields annotated @field_list(index). */
extern void clone_preserving_field_list(in CloneType type, in bit<32> session, bit<8> index);

/* Cut the packet to `length` bytes when it leaves the switch. */
extern void truncate(in bit<32> length);

@p4switch_unsupported
extern void assert(in bool check);
@p4switch_unsupported
extern void assume(in bool check);

/* Accepted and ignored: p4switch does not print data-plane logs. */
extern void log_msg<T>(string msg, in T data);

/* Checksums (HashAlgorithm.csum16 for IPv4), in VerifyChecksum and ComputeChecksum. */
extern void verify_checksum<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);
extern void update_checksum<T, O>(in bool condition, in T data, inout O checksum,
                                  HashAlgorithm algo);
extern void verify_checksum_with_payload<T, O>(in bool condition, in T data, in O checksum,
                                               HashAlgorithm algo);
extern void update_checksum_with_payload<T, O>(in bool condition, in T data, inout O checksum,
                                               HashAlgorithm algo);

parser Parser<H, M>(packet_in b,
                    out H parsedHdr,
                    inout M meta,
                    inout standard_metadata_t standard_metadata);
control VerifyChecksum<H, M>(inout H hdr, inout M meta);
control Ingress<H, M>(inout H hdr, inout M meta, inout standard_metadata_t standard_metadata);
control Egress<H, M>(inout H hdr, inout M meta, inout standard_metadata_t standard_metadata);
control ComputeChecksum<H, M>(inout H hdr, inout M meta);
control Deparser<H>(packet_out b, in H hdr);

package V1Switch<H, M>(Parser<H, M> p,
                       VerifyChecksum<H, M> vr,
                       Ingress<H, M> ig,
                       Egress<H, M> eg,
                       ComputeChecksum<H, M> ck,
                       Deparser<H> dep);

#endif  /* _V1_MODEL_P4_ */
