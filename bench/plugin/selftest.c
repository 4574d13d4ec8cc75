// SPDX-License-Identifier: GPL-2.0
/*
 * fr_count's self-check: known instruction sequences between the bench's
 * markers, run under QEMU's user-mode emulator with the plugin loaded
 * (tests/harness/count-selftest.sh); the counts must be exactly these:
 *
 *   id 1 (twice)  N x {atomic add to memory, decrement, branch}
 *   id 2          N x {swap with memory, register swap, decrement, branch}
 *   id 3          N x {load, store, decrement, branch}
 *   id 4          nothing
 *   id 5          ipi_probe(), whose address was sent to the plugin as a
 *                 function an IPI runs (markers 5 and 6, as fr_bench sends
 *                 the guest's), called 10 times by a second thread (a
 *                 vCPU of its own under QEMU's user-mode emulator) and 3
 *                 times by the thread that opened the region, whose own
 *                 calls are not IPIs: 10 ipis
 *   id 6          a second thread's N atomic adds, outside any interrupt
 *                 (there are none here): another vCPU's work that is not
 *                 a flush IPI's, not counted; fewer than N atomics (the
 *                 region's own thread creates and joins it)
 *
 * (arm64: the swap is SWP, the second instruction a load-acquire, LDAR:
 * one load more, no read-modify-write.) The TLB invalidations, privileged, are
 * checked by their decoding (decode-test.c).
 *
 * Each loop is one asm statement with the markers at its ends, so that
 * nothing the compiler emits lands inside a region. Prints nothing; the
 * script compares the plugin's file with the figures in the script.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#define N 1000

#if defined(__x86_64__)
#define M(k) ".byte 0x66, 0x0f, 0x1f, 0x84, 0x00\n\t.long 0x4652000" #k "\n\t"
#elif defined(__aarch64__)
#define M(k) "hint #(104 + " #k ")\n\t"
/* LDADD and SWP (ARMv8.1 LSE), whatever the compiler's default. */
asm(".arch_extension lse");
#endif

static void send_bits(uint64_t v, int n)
{
	while (n--) {
		if (v >> n & 1)
			asm volatile(M(4) ::: "memory");
		else
			asm volatile(M(3) ::: "memory");
	}
}

static uint64_t mem[4];

__attribute__((noinline)) static void ipi_probe(void)
{
	asm volatile("" ::: "memory");
}

static void *other_vcpu(void *arg)
{
	for (int i = 0; i < 10; i++)
		ipi_probe();
	return arg;
}

static void *other_atomics(void *arg)
{
	for (int i = 0; i < N; i++)
		__atomic_fetch_add(&mem[2], 1, __ATOMIC_SEQ_CST);
	return arg;
}

/* A loop of N times BODY between a begin and an end marker, in one asm statement. */
#if defined(__x86_64__)
#define LOOP(body) M(1) "mov %[n], %[c]\n1: " body "dec %[c]\n\tjnz 1b\n\t" M(2)
#define ISA(x86, arm64) x86
#elif defined(__aarch64__)
#define LOOP(body) M(1) "mov %[c], %[n]\n1: " body "subs %[c], %[c], #1\n\tb.ne 1b\n\t" M(2)
#define ISA(x86, arm64) arm64
#endif
#define OPERANDS [c] "=&r"(n), [t] "+r"(t) : [p] "r"(p), [n] "i"(N)

int main(void)
{
	uint64_t *p = mem, n, t = 1;
	pthread_t th;

	/* Start counting (the plugin instruments nothing but markers before). */
	asm volatile(M(6) ::: "memory");
	for (int r = 0; r < 2; r++) {
		send_bits(1, 32);
		asm volatile(LOOP(ISA("lock xaddq %[t], (%[p])\n\t",
				      "ldadd %[t], %[t], [%[p]]\n\t"))
			     : OPERANDS : "memory", "cc");
	}
	send_bits(2, 32);
	asm volatile(LOOP(ISA("xchg %[t], (%[p])\n\txchg %[t], %%rax\n\t",
			      "swp %[t], %[t], [%[p]]\n\tldar %[t], [%[p]]\n\t"))
		     : OPERANDS : "memory", "cc", ISA("rax", "x0"));
	send_bits(3, 32);
	asm volatile(LOOP(ISA("mov (%[p]), %[t]\n\tmov %[t], 8(%[p])\n\t",
			      "ldr %[t], [%[p]]\n\tstr %[t], [%[p], #8]\n\t"))
		     : OPERANDS : "memory", "cc");
	send_bits(4, 32);
	asm volatile(M(1) M(2) ::: "memory");
	send_bits((uintptr_t)ipi_probe, 64);
	asm volatile(M(5) M(6) ::: "memory");
	send_bits(5, 32);
	asm volatile(M(1) ::: "memory");
	for (int i = 0; i < 3; i++)
		ipi_probe();
	if (pthread_create(&th, NULL, other_vcpu, NULL) || pthread_join(th, NULL))
		return 1;
	asm volatile(M(2) ::: "memory");
	send_bits(6, 32);
	asm volatile(M(1) ::: "memory");
	if (pthread_create(&th, NULL, other_atomics, NULL) || pthread_join(th, NULL))
		return 1;
	asm volatile(M(2) ::: "memory");
	printf("%llu\n", (unsigned long long)mem[0] % 2);
	return 0;
}
