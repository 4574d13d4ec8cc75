/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fr_count's instruction decoding (decode.c), shared with its test.
 * Markers (fr_count.c's head): M_BEGIN..M_COMMIT, M_NONE for any other
 * instruction.
 */
#ifndef FR_COUNT_DECODE_H
#define FR_COUNT_DECODE_H

#include <stddef.h>
#include <stdint.h>

enum { M_NONE, M_BEGIN, M_END, M_BIT0, M_BIT1, M_IPI, M_COMMIT, M_IRQ, M_LAST = M_IRQ };

/* x86-64: the marker the n bytes b hold, or M_NONE. */
int x86_marker(const uint8_t *b, size_t n);
/*
 * x86-64: 1 when the instruction is an atomic read-modify-write; *tlbi
 * the name of its kind of TLB invalidation, or NULL.
 */
int x86_classify(const uint8_t *b, size_t n, const char **tlbi);
/* arm64: the marker the instruction is, or M_NONE. */
int arm64_marker(uint32_t insn);
/* arm64: the same as x86_classify; tlbi[] "" when no TLBI. */
int arm64_classify(uint32_t insn, char *tlbi, size_t tsz);
/* 1 for the return from an interrupt: x86-64 IRETQ, arm64 ERET. */
int x86_is_iret(const uint8_t *b, size_t n);
int arm64_is_eret(uint32_t insn);

#endif /* FR_COUNT_DECODE_H */
