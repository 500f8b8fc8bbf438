/*-------------------------------------------------------------------------
 *
 * qtext.h
 *	  The query text arena (qtext.c): normalized query texts in shared
 *	  memory, capped by pgss_ng.query_text_memory, each distinct text stored
 *	  once and shared by the entries that use it.  docs/design.md.
 *	  Locking: a store or release takes its hash's partition lock in the
 *	  dedup hash (wait event pgss_ng_qtext), innermost; readers copy a text
 *	  without a lock, through the reference their entry holds.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_QTEXT_H
#define PGSS_NG_QTEXT_H

#include "utils/dsa.h"

/* Arena counters, as shown by pgss_ng_info. */
typedef struct PgssNgQtextStats
{
	int64		bytes;			/* bytes of stored texts and their headers */
	int64		allocated_bytes;	/* DSA bytes of those and of the dedup
									 * hash's elements */
	int64		limit_bytes;	/* pgss_ng.query_text_memory in bytes */
	int64		count;			/* distinct texts stored */
	int64		dropped;		/* texts that could not be stored */
} PgssNgQtextStats;

extern void pgss_ng_qtext_init(void);
extern void pgss_ng_qtext_shmem_request(void);
extern Size pgss_ng_qtext_shmem_size(void);
extern void pgss_ng_qtext_shmem_startup(void);

extern dsa_pointer pgss_ng_qtext_store(dsa_area *area, const char *text,
									   int len, bool restore);
extern bool pgss_ng_qtext_valid(const char *text, int len, int encoding);
extern const char *pgss_ng_qtext_data(dsa_area *area, dsa_pointer text,
									  int *len);
extern char *pgss_ng_qtext_copy(dsa_area *area, dsa_pointer text, int *len);
extern void pgss_ng_qtext_release(dsa_area *area, dsa_pointer text);
extern bool pgss_ng_qtext_needs_room(bool starting);
extern void pgss_ng_qtext_stats(PgssNgQtextStats *stats);
extern void pgss_ng_qtext_reset_dropped(void);

#endif							/* PGSS_NG_QTEXT_H */
