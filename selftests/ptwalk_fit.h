/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Least squares y = a + b x: the one fit of ptwalk. The selftests'
 * linearity check (ptwalk_cost) links it; make qualify's cost-across-sizes
 * fit and its budgets (scripts/ptwalk_report/fit.py) load the same source,
 * built as a shared object, through ctypes. Change struct ptw_fit only
 * together with PTW_FIT_ABI and the ctypes mirror in fit.py (a test checks
 * sizeof and the figures against scipy).
 */
#ifndef PTWALK_FIT_H
#define PTWALK_FIT_H

#define PTW_FIT_ABI 1

struct ptw_fit {
	double a;		/* intercept */
	double b;		/* slope */
	double r2;		/* coefficient of determination (0 if y is constant) */
	double s;		/* residual standard error, n - 2 degrees of freedom
				 * (0 for n = 2)
				 */
	double x_mean;
	double sxx;		/* sum of (x - x_mean)^2 */
	double x_min, x_max;
	unsigned int n;
};

/* 0 on success; -1 when n < 2 or every x is the same (no slope) */
int ptw_fit_linear(const double *x, const double *y, unsigned int n,
		   struct ptw_fit *f);

/*
 * Standard error of one new observation at x:
 * s * sqrt(1 + 1/n + (x - x_mean)^2 / sxx). Times the t quantile with
 * n - 2 degrees of freedom it is the half-width of the prediction interval.
 */
double ptw_fit_pred_se(const struct ptw_fit *f, double x);

/* PTW_FIT_ABI * 1000 + sizeof(struct ptw_fit), checked by the ctypes side */
unsigned int ptw_fit_abi(void);

#endif /* PTWALK_FIT_H */
