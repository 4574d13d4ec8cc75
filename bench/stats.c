// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
#include "bench.h"

/* ---- statistics ---- */

int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median and the order-statistic 95% CI of the median; 1 if exact CI. */
int median_ci(const double *v, int n, double *med, double *lo, double *hi)
{
	double s[MAX_REPS], p, cdf = 0;
	int i, k = 0;

	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	*med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	/* cdf(j) = P(Binomial(n, 1/2) <= j); k = largest rank with cdf(k-1) <= 0.025. */
	p = 1;
	for (i = 0; i < n; i++)
		p /= 2;		/* C(n,0) / 2^n */
	for (i = 0; i < n / 2; i++) {
		cdf += p;
		if (cdf > 0.025)
			break;
		k = i + 1;
		p = p * (n - i) / (i + 1);
	}
	if (k < 1) {
		*lo = s[0];
		*hi = s[n - 1];
		return 0;
	}
	*lo = s[k - 1];
	*hi = s[n - k];
	return 1;
}

