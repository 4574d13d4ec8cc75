/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal TAP output in the kselftest style: "ok N - name" or
 * "not ok N - name", "# " diagnostics, "1..N" at the end, and a closing
 * "# N passed, N failed, N skipped" line. Thread-safe, so that workers may
 * report from their own threads.
 */
#ifndef FR_TAP_H
#define FR_TAP_H

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t tap_lock = PTHREAD_MUTEX_INITIALIZER;
static int tap_n, tap_pass, tap_fail, tap_skip;

static inline void tap_vreport(int ok, const char *skip, const char *fmt,
			       va_list ap)
{
	pthread_mutex_lock(&tap_lock);
	tap_n++;
	if (skip)
		tap_skip++;
	else if (ok)
		tap_pass++;
	else
		tap_fail++;
	printf("%sok %d - ", ok || skip ? "" : "not ", tap_n);
	vprintf(fmt, ap);
	if (skip)
		printf(" # SKIP %s", skip);
	printf("\n");
	fflush(stdout);
	pthread_mutex_unlock(&tap_lock);
}

static inline int __attribute__((format(printf, 2, 3)))
tap_ok(int ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vreport(ok, NULL, fmt, ap);
	va_end(ap);
	return ok;
}

static inline void __attribute__((format(printf, 2, 3)))
tap_skip_test(const char *why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vreport(1, why, fmt, ap);
	va_end(ap);
}

static inline void __attribute__((format(printf, 1, 2)))
tap_diag(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&tap_lock);
	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	pthread_mutex_unlock(&tap_lock);
}

/* Checks that a call failed with the expected errno, and says what it got. */
#define tap_errno(ret, want, ...)					\
	({								\
		long __ret = (ret);					\
		int __e = errno, __r = __ret == -1 && __e == (want);	\
		if (!__r)						\
			tap_diag("want errno %s, got ret %ld errno %s",	\
				 strerror(want), __ret, strerror(__e));	\
		tap_ok(__r, __VA_ARGS__);				\
	})

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	printf("# %d passed, %d failed, %d skipped\n", tap_pass, tap_fail,
	       tap_skip);
	fflush(stdout);
	return tap_fail ? 1 : 0;
}

#endif /* FR_TAP_H */
