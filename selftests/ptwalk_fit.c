// SPDX-License-Identifier: GPL-2.0
/*
 * Least squares y = a + b x (see ptwalk_fit.h). Two passes over the data
 * (means first), which keeps the sums exact enough for x in the hundreds
 * of millions and y in nanoseconds.
 */
#include <math.h>

#include "ptwalk_fit.h"

int ptw_fit_linear(const double *x, const double *y, unsigned int n,
		   struct ptw_fit *f)
{
	double sx = 0, sy = 0, sxy = 0, ss_tot = 0, ss_res = 0;
	unsigned int i;

	if (n < 2)
		return -1;
	f->n = n;
	f->x_min = x[0];
	f->x_max = x[0];
	for (i = 0; i < n; i++) {
		sx += x[i];
		sy += y[i];
		if (x[i] < f->x_min)
			f->x_min = x[i];
		if (x[i] > f->x_max)
			f->x_max = x[i];
	}
	f->x_mean = sx / n;
	sy /= n;
	f->sxx = 0;
	for (i = 0; i < n; i++) {
		f->sxx += (x[i] - f->x_mean) * (x[i] - f->x_mean);
		sxy += (x[i] - f->x_mean) * (y[i] - sy);
	}
	if (!(f->sxx > 0))
		return -1;
	f->b = sxy / f->sxx;
	f->a = sy - f->b * f->x_mean;
	for (i = 0; i < n; i++) {
		double e = y[i] - (f->a + f->b * x[i]);

		ss_res += e * e;
		ss_tot += (y[i] - sy) * (y[i] - sy);
	}
	f->r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : 0;
	f->s = n > 2 ? sqrt(ss_res / (n - 2)) : 0;
	return 0;
}

double ptw_fit_pred_se(const struct ptw_fit *f, double x)
{
	double d = x - f->x_mean;

	return f->s * sqrt(1.0 + 1.0 / f->n + d * d / f->sxx);
}

unsigned int ptw_fit_abi(void)
{
	return PTW_FIT_ABI * 1000 + (unsigned int)sizeof(struct ptw_fit);
}
