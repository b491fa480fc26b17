/*
 * p4switch core library: the part of P4_16's core library that p4switch implements.
 * Written for p4switch; the names and signatures follow the P4_16 language specification so
 * that programs written for p4c compile unchanged.
 */
#ifndef _CORE_P4_
#define _CORE_P4_

/* Parser errors. User programs may add members with their own `error { ... }`. */
error {
    NoError,
    PacketTooShort,
    NoMatch,
    StackOutOfBounds,
    HeaderTooShort,
    ParserTimeout,
    ParserInvalidArgument
}

/* The packet as the parser sees it. */
extern packet_in {
    void extract<T>(out T hdr);
    T lookahead<T>();
    void advance(in bit<32> sizeInBits);
    bit<32> length();
}

/* The packet as the deparser builds it. */
extern packet_out {
    void emit<T>(in T hdr);
}

/* In a parser: reject the packet with `toSignal` unless `check` holds. */
extern void verify(in bool check, in error toSignal);

/* The action tables run when nothing else is said. */
@noWarn("unused")
action NoAction() {}

/* Match kinds p4switch tables support. */
match_kind {
    exact,
    ternary,
    lpm
}

#endif  /* _CORE_P4_ */
