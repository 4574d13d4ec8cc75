// SPDX-License-Identifier: GPL-2.0
/* TAP output in the kselftest style (tlib.h). */
#define _GNU_SOURCE
#include "tlib.h"

static pthread_mutex_t tap_lock = PTHREAD_MUTEX_INITIALIZER;
int tap_n, tap_pass, tap_fail;
static int tap_skip;



static void tap_vreport(int ok, const char *skip, const char *fmt,
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

int __attribute__((format(printf, 2, 3)))
tap_ok(int ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vreport(ok, NULL, fmt, ap);
	va_end(ap);
	return ok;
}

void __attribute__((format(printf, 2, 3)))
tap_skip_test(const char *why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tap_vreport(1, why, fmt, ap);
	va_end(ap);
}

void __attribute__((format(printf, 1, 2)))
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

int tap_errno(long ret, int want, const char *fmt, ...)
{
	int e = errno, ok = ret == -1 && e == want;
	va_list ap;

	if (!ok)
		tap_diag("want errno %s, got ret %ld errno %s", strerror(want),
			 ret, strerror(e));
	va_start(ap, fmt);
	tap_vreport(ok, NULL, fmt, ap);
	va_end(ap);
	return ok;
}

int tap_done(void)
{
	printf("1..%d\n", tap_n);
	printf("# %d passed, %d failed, %d skipped\n", tap_pass, tap_fail,
	       tap_skip);
	fflush(stdout);
	return tap_fail ? 1 : 0;
}
