/*-------------------------------------------------------------------------
 *
 * normalize.c
 *	  The normalized text of one statement, byte for byte that of the
 *	  server's pg_stat_statements (1.10 on 15 and 16, 1.11 on 17, 1.12 on 18):
 *	  its own part of the source string, each constant that core jumbling
 *	  recorded replaced by "$n", the constants' lengths measured by core's own
 *	  scanner on a private copy of the statement.  docs/design.md, "Normalized
 *	  texts".  Locking: none (backend-local, palloc'd).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/keywords.h"
#include "parser/scanner.h"
#include "utils/memutils.h"

#include "normalize.h"

/*
 * Bytes of output reserved per constant on top of query_len.  A constant is
 * at least one byte of source text and "$n" is at most 11 bytes ('$' plus
 * ten digits of a positive int), followed for a squashed list by
 * PGSS_NG_SQUASHED_SUFFIX, so this always suffices.
 */
#define NORM_EXTRA_BYTES_PER_CONST	(10 + sizeof(PGSS_NG_SQUASHED_SUFFIX) - 1)

static int	compare_location(const void *a, const void *b);
static void fill_constant_lengths(JumbleState *jstate, const char *query,
								  int query_loc, int query_len);


/*
 * compare_location
 *
 * qsort comparator ordering LocationLen records by ascending location (a
 * byte offset).  Equal locations compare equal; their relative order does
 * not matter because all but the first of a run are ignored as duplicates.
 *
 * Memory: none.  Errors: none.
 */
static int
compare_location(const void *a, const void *b)
{
	int			la = ((const LocationLen *) a)->location;
	int			lb = ((const LocationLen *) b)->location;

	if (la < lb)
		return -1;
	if (la > lb)
		return 1;
	return 0;
}

/*
 * fill_constant_lengths
 *		Sort jstate->clocations by location and set the length (bytes) of
 *		every constant found by lexing a NUL-terminated private copy of
 *		the statement's query_len bytes (query_loc: the statement's offset
 *		in the source string); the others keep -1 (design.md, "Normalized
 *		texts").  Memory: a child of CurrentMemoryContext, deleted before
 *		returning.  Errors: the scanner's, which cannot happen here.
 */
static void
fill_constant_lengths(JumbleState *jstate, const char *query,
					  int query_loc, int query_len)
{
	LocationLen *locs = jstate->clocations;
	int			nlocs = jstate->clocations_count;
	MemoryContext scan_cxt;
	MemoryContext old_cxt;
	char	   *text;
	core_yyscan_t yyscanner;
	core_yy_extra_type yyextra;
	core_YYSTYPE yylval;
	YYLTYPE		yylloc;
	int			last_loc = -1;
	int			i;

	if (nlocs > 1)
		qsort(locs, nlocs, sizeof(LocationLen), compare_location);

	scan_cxt = AllocSetContextCreate(CurrentMemoryContext,
									 "pgss_ng normalize scan",
									 ALLOCSET_SMALL_SIZES);
	old_cxt = MemoryContextSwitchTo(scan_cxt);

	/* Private, NUL-terminated copy of exactly this statement's bytes */
	text = palloc(query_len + 1);
	memcpy(text, query, query_len);
	text[query_len] = '\0';

	/* Same scanner setup as raw_parser() */
	yyscanner = scanner_init(text, &yyextra, &ScanKeywords, ScanKeywordTokens);

	/* The parser already emitted any escape-string warnings; don't repeat */
	yyextra.escape_string_warning = false;

	for (i = 0; i < nlocs; i++)
	{
		int			loc = locs[i].location - query_loc;
		int			tok = 0;

		if (pgss_ng_loc_squashed(&locs[i]))
			continue;			/* length set by core jumbling */
		if (loc < 0)
			continue;			/* not inside this statement; leave at -1 */
		if (loc <= last_loc)
			continue;			/* duplicate of a constant already handled */
		if (loc >= query_len)
			break;				/* past the statement; so are all the rest */

		/* Lex until a token starts at (or, unexpectedly, past) loc */
		for (;;)
		{
			tok = core_yylex(&yylval, &yylloc, yyscanner);
			if (tok == 0)
				break;			/* end of statement */
			if (yylloc < loc)
				continue;

			if (text[loc] == '-')
			{
				/* Negative constant: take in the number after the minus */
				tok = core_yylex(&yylval, &yylloc, yyscanner);
				if (tok == 0)
					break;
			}

			/* Flex has put a NUL right after the current token's text */
			locs[i].length = (int) strlen(yyextra.scanbuf + loc);
			break;
		}

		if (tok == 0)
			break;				/* remaining lengths stay -1 */

		last_loc = loc;
	}

	scanner_finish(yyscanner);

	MemoryContextSwitchTo(old_cxt);
	MemoryContextDelete(scan_cxt);
}

/*
 * pgss_ng_normalize_query
 *		See normalize.h.  Writes the statement (query_len bytes, offsets in
 *		bytes) with each measured constant replaced by "$N", N counting the
 *		constants replaced from highest_extern_param_id + 1 (design.md,
 *		"Normalized texts").  Memory: the result (at most query_len + 10
 *		bytes per constant + 1) is palloc'd in CurrentMemoryContext.
 *		Errors: out of memory, or too large near the 1 GB palloc limit.
 */
char *
pgss_ng_normalize_query(JumbleState *jstate, const char *query,
						int query_loc, int *query_len)
{
	int			in_len = *query_len;
	Size		out_size;
	char	   *out;
	int			out_pos = 0;	/* bytes written to out */
	int			in_pos = 0;		/* bytes of query consumed */
	int			nreplaced = 0;	/* constants replaced so far */
	int			i;

	if (in_len < 0)
		in_len = 0;

	if (jstate->clocations_count > 0)
		fill_constant_lengths(jstate, query, query_loc, in_len);

	out_size = (Size) in_len +
		(Size) jstate->clocations_count * NORM_EXTRA_BYTES_PER_CONST + 1;
	out = palloc(out_size);

	for (i = 0; i < jstate->clocations_count; i++)
	{
		LocationLen *loc = &jstate->clocations[i];
		int			off = loc->location - query_loc;
		int			len = loc->length;

		if (pgss_ng_loc_extern_param(loc) &&
			!pgss_ng_jstate_has_squashed(jstate))
			continue;			/* keep the parameter's own text */
		if (len < 0)
			continue;			/* duplicate or not found: leave as is */

		/*
		 * Lengths are only set inside [0, in_len) and never extend past it.
		 * A constant starting inside the previous replaced extent could only
		 * come from a location the scanner overshot; it is already covered.
		 */
		if (off < in_pos || off + len > in_len)
			continue;

		memcpy(out + out_pos, query + in_pos, off - in_pos);
		out_pos += off - in_pos;

		nreplaced++;
		out_pos += snprintf(out + out_pos, out_size - out_pos, "$%d%s",
							nreplaced + jstate->highest_extern_param_id,
							pgss_ng_loc_squashed(loc) ?
							PGSS_NG_SQUASHED_SUFFIX : "");

		in_pos = off + len;
	}

	memcpy(out + out_pos, query + in_pos, in_len - in_pos);
	out_pos += in_len - in_pos;

	Assert((Size) out_pos < out_size);
	out[out_pos] = '\0';

	*query_len = out_pos;
	return out;
}
