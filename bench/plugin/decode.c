// SPDX-License-Identifier: GPL-2.0
/*
 * fr_count's decoding of guest instructions (decode.h): the bench's
 * markers, atomic read-modify-writes, TLB invalidations. Checked by
 * decode-test.c.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "decode.h"

/* ---- x86-64 ---- */

int x86_marker(const uint8_t *b, size_t n)
{
	static const uint8_t nopw[] = { 0x66, 0x0f, 0x1f, 0x84, 0x00 };
	uint32_t disp;

	if (n != 9 || memcmp(b, nopw, sizeof(nopw)))
		return M_NONE;
	disp = b[5] | b[6] << 8 | b[7] << 16 | (uint32_t)b[8] << 24;
	if ((disp & 0xfffffff0u) != 0x46520000u)
		return M_NONE;
	disp &= 0xf;
	return disp >= M_BEGIN && disp <= M_LAST ? (int)disp : M_NONE;
}

/*
 * x86: 1 when the instruction is an atomic read-modify-write (a LOCK
 * prefix, or XCHG with a memory operand, locked without one); *tlbi the
 * kind of TLB invalidation, or NULL.
 */
int x86_classify(const uint8_t *b, size_t n, const char **tlbi)
{
	size_t i = 0;
	int lock = 0, opsize = 0;
	uint8_t op, modrm;

	*tlbi = NULL;
	for (; i < n; i++) {
		switch (b[i]) {
		case 0xf0:
			lock = 1;
			continue;
		case 0x66:
			opsize = 1;
			continue;
		case 0xf2: case 0xf3: case 0x2e: case 0x36: case 0x3e:
		case 0x26: case 0x64: case 0x65: case 0x67:
			continue;
		}
		break;
	}
	if (i < n && (b[i] & 0xf0) == 0x40)	/* REX */
		i++;
	if (i >= n)
		return lock;
	op = b[i];
	if (op == 0x86 || op == 0x87)
		return i + 1 < n && (b[i + 1] >> 6) != 3 ? 1 : lock;
	if (op != 0x0f || i + 2 >= n)
		return lock;
	op = b[i + 1];
	modrm = b[i + 2];
	if (op == 0x01 && (modrm >> 6) != 3 && ((modrm >> 3) & 7) == 7)
		*tlbi = "invlpg";
	else if (op == 0x22 && ((modrm >> 3) & 7) == 3)
		*tlbi = "cr3";
	else if (op == 0x38 && opsize && modrm == 0x82)
		*tlbi = "invpcid";
	return lock;
}

/* ---- arm64 ---- */

int arm64_marker(uint32_t insn)
{
	uint32_t imm;

	if ((insn & 0xfffff01fu) != 0xd503201fu)	/* HINT #imm */
		return M_NONE;
	imm = (insn >> 5) & 0x7f;
	return imm >= 104 + M_BEGIN && imm <= 104 + M_LAST ? (int)(imm - 104) : M_NONE;
}

int arm64_classify(uint32_t insn, char *tlbi, size_t tsz)
{
	*tlbi = 0;
	/* Load/store exclusive class: size 001000 o2 L o1 Rs o0 Rt2 Rn Rt. */
	if ((insn & 0x3f000000u) == 0x08000000u) {
		int o2 = insn >> 23 & 1, l = insn >> 22 & 1, o1 = insn >> 21 & 1;

		if (o2 && o1)			/* CAS* */
			return 1;
		if (!o2 && o1 && !(insn >> 31))	/* CASP* */
			return 1;
		if (!o2 && !l)			/* STXR, STLXR, STXP, STLXP */
			return 1;
		return 0;			/* LDXR*, LDAR, STLR */
	}
	/* LSE atomics and SWP: size 111 0 00 A R 1 Rs o3 opc 00 Rn Rt. */
	if ((insn & 0x3f200c00u) == 0x38200000u) {
		int o3 = insn >> 15 & 1, opc = insn >> 12 & 7;

		return !(o3 && opc == 4);	/* not LDAPR */
	}
	/* TLBI: SYS #op1, C8, Cm, #op2, Xt. */
	if ((insn & 0xfff8f000u) == 0xd5088000u) {
		static const struct { uint32_t key; const char *name; } k[] = {
			{ 0x0300, "vmalle1is" }, { 0x0310, "vae1is" }, { 0x0320, "aside1is" },
			{ 0x0330, "vaae1is" }, { 0x0350, "vale1is" }, { 0x0370, "vaale1is" },
			{ 0x0700, "vmalle1" }, { 0x0710, "vae1" }, { 0x0720, "aside1" },
			{ 0x0730, "vaae1" }, { 0x0750, "vale1" }, { 0x0770, "vaale1" },
			{ 0x0210, "rvae1is" }, { 0x0230, "rvaae1is" }, { 0x0250, "rvale1is" },
			{ 0x0270, "rvaale1is" }, { 0x0610, "rvae1" }, { 0x0650, "rvale1" },
			{ 0x0110, "vae1os" }, { 0x0150, "vale1os" }, { 0x0510, "rvae1os" },
		};
		uint32_t op1 = insn >> 16 & 7, crm = insn >> 8 & 0xf, op2 = insn >> 5 & 7;
		uint32_t key = op1 << 12 | crm << 8 | op2 << 4;
		size_t j;

		for (j = 0; j < sizeof(k) / sizeof(k[0]); j++)
			if (k[j].key == key) {
				snprintf(tlbi, tsz, "%s", k[j].name);
				return 0;
			}
		snprintf(tlbi, tsz, "tlbi_%u_c%u_%u", op1, crm, op2);
	}
	return 0;
}

int x86_is_iret(const uint8_t *b, size_t n)
{
	return n == 2 && b[0] == 0x48 && b[1] == 0xcf;
}

int arm64_is_eret(uint32_t insn)
{
	return insn == 0xd69f03e0u;
}
