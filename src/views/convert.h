/*-------------------------------------------------------------------------
 *
 * convert.h
 *	  A stored query text shown in the reader's database encoding
 *	  (convert.c): converted where it can be, a visible substitute for
 *	  each character that cannot, never an ERROR.  For the view's reads.
 *
 * Locking: none; a PgssNgConvert is the reader's own.
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_CONVERT_H
#define PGSS_NG_CONVERT_H

#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"

/*
 * What one read keeps from text to text: the reader's encoding, the
 * conversion function from each server encoding (looked up once), and a
 * buffer for the converted text.
 */
typedef struct PgssNgConvert
{
	int			to_encoding;
	bool		looked_up[PG_ENCODING_BE_LAST + 1];
	Oid			proc[PG_ENCODING_BE_LAST + 1];	/* InvalidOid: none */
	StringInfoData out;
	char	   *chunk;			/* a converted chunk */
} PgssNgConvert;

extern void pgss_ng_convert_init(PgssNgConvert *cv);
extern const char *pgss_ng_convert_text(PgssNgConvert *cv, const char *text,
										int len, int encoding, int *outlen);

#endif							/* PGSS_NG_CONVERT_H */
