/*-------------------------------------------------------------------------
 *
 * sampler.h
 *	  The wait-event sampler that the writer runs (sampler.c).
 *
 * Locking: see sampler.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_SAMPLER_H
#define PGSS_NG_SAMPLER_H

extern long pgss_ng_sampler_timeout(void);
extern void pgss_ng_sampler_run(void);
extern void pgss_ng_sampler_finish(void);

#endif							/* PGSS_NG_SAMPLER_H */
