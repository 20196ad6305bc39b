/* The median of a sample: the statistic usbyte's measurements are summarised by where one
 * iteration's hiccup must not move the number (the verification's comparison, the cost model's
 * samples). */
#ifndef USBYTE_MEDIAN_H
#define USBYTE_MEDIAN_H

/* Sorts v[0..n) in place and returns its median (the mean of the middle two for even n); NAN
 * when n == 0. */
double ub_median(double *v, int n);

#endif
