/*-------------------------------------------------------------------------
 *
 * convert.c
 *	  A stored query text (valid in its database's encoding, no NUL) shown
 *	  in the reader's encoding without the ERROR pg_any_to_server() would
 *	  raise (one role's statement would break every read): what cannot be
 *	  shown becomes U+FFFD in a UTF8 database, '?' in another; SQL_ASCII
 *	  readers get the bytes.  Conversions run in their no-error mode, a
 *	  failed lookup of one meaning "no conversion".  No lock.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "lib/stringinfo.h"
#include "mb/pg_wchar.h"
#include "utils/memutils.h"

#include "convert.h"

/* source bytes converted per call of a conversion function */
#define CONVERT_CHUNK	8192

/* U+FFFD in UTF-8 */
#define SUBSTITUTE_UTF8 "\xEF\xBF\xBD"

/*
 * pgss_ng_convert_init
 *		Prepare a read's conversions into the database's encoding.
 *		Memory: CurrentMemoryContext.
 */
void
pgss_ng_convert_init(PgssNgConvert *cv)
{
	cv->to_encoding = GetDatabaseEncoding();
	memset(cv->looked_up, 0, sizeof(cv->looked_up));
	initStringInfo(&cv->out);
	cv->chunk = NULL;
}

/* append the substitute for one character that cannot be shown */
static void
substitute(PgssNgConvert *cv)
{
	if (cv->to_encoding == PG_UTF8)
		appendBinaryStringInfo(&cv->out, SUBSTITUTE_UTF8,
							   sizeof(SUBSTITUTE_UTF8) - 1);
	else
		appendStringInfoChar(&cv->out, '?');
}

/* bytes of the character at text[pos] in encoding, within len */
static int
char_len(int encoding, const char *text, int pos, int len)
{
	int			l = pg_encoding_mblen(encoding, text + pos);

	return Max(1, Min(l, len - pos));
}

/*
 * verbatim_where_valid
 *		Text of unknown encoding (SQL_ASCII): keep each character valid in
 *		the reader's encoding, substitute each byte that starts no valid
 *		character.
 */
static void
verbatim_where_valid(PgssNgConvert *cv, const char *text, int len)
{
	int			pos = 0;

	while (pos < len)
	{
		int			l = pg_encoding_verifymbchar(cv->to_encoding, text + pos,
												 len - pos);

		if (l > 0)
		{
			appendBinaryStringInfo(&cv->out, text + pos, l);
			pos += l;
		}
		else
		{
			substitute(cv);
			pos++;
		}
	}
}

/*
 * ascii_only
 *		No conversion exists: keep the ASCII characters (the same in every
 *		server encoding), substitute every other character.
 */
static void
ascii_only(PgssNgConvert *cv, const char *text, int len, int encoding)
{
	int			pos = 0;

	while (pos < len)
	{
		if (IS_HIGHBIT_SET(text[pos]))
		{
			substitute(cv);
			pos += char_len(encoding, text, pos, len);
		}
		else
			appendStringInfoChar(&cv->out, text[pos++]);
	}
}

/*
 * convert_with_substitutes
 *		Convert with the conversion function proc, chunk by chunk, in its
 *		no-error mode: it stops before a character it cannot convert,
 *		which is then substituted and skipped.
 */
static void
convert_with_substitutes(PgssNgConvert *cv, Oid proc, const char *text,
						 int len, int encoding)
{
	int			destlen = CONVERT_CHUNK * MAX_CONVERSION_GROWTH + 1;
	int			pos = 0;

	if (cv->chunk == NULL)
		cv->chunk = MemoryContextAlloc(GetMemoryChunkContext(cv->out.data),
									   destlen);
	while (pos < len)
	{
		int			n = pg_encoding_mbcliplen(encoding, text + pos, len - pos,
											  CONVERT_CHUNK);
		int			done;

		n = Max(n, char_len(encoding, text, pos, len));
		done = pg_do_encoding_conversion_buf(proc, encoding, cv->to_encoding,
											 (unsigned char *) text + pos, n,
											 (unsigned char *) cv->chunk,
											 destlen, true);
		appendStringInfoString(&cv->out, cv->chunk);
		pos += done;
		if (done < n)
		{
			substitute(cv);
			pos += char_len(encoding, text, pos, len);
		}
	}
}

/*
 * pgss_ng_convert_text
 *		The text (len bytes in encoding, valid, no NUL) as the reader's
 *		database shows it: text itself when unchanged, else the converted
 *		text in cv's buffer until the next call; its length in *outlen.  No
 *		ERROR but out of memory.  Memory: the context current at
 *		pgss_ng_convert_init.
 */
const char *
pgss_ng_convert_text(PgssNgConvert *cv, const char *text, int len,
					 int encoding, int *outlen)
{
	int			to = cv->to_encoding;

	*outlen = len;
	if (len <= 0 || encoding == to || to == PG_SQL_ASCII)
		return text;
	/* not a server encoding (cannot be stored): bytes of unknown encoding */
	if (!PG_VALID_BE_ENCODING(encoding))
		encoding = PG_SQL_ASCII;
	if (encoding == PG_SQL_ASCII &&
		pg_verify_mbstr(to, text, len, true))
		return text;

	resetStringInfo(&cv->out);
	if (encoding == PG_SQL_ASCII)
		verbatim_where_valid(cv, text, len);
	else
	{
		if (!cv->looked_up[encoding])
		{
			cv->proc[encoding] = FindDefaultConversionProc(encoding, to);
			cv->looked_up[encoding] = true;
		}
		if (OidIsValid(cv->proc[encoding]))
			convert_with_substitutes(cv, cv->proc[encoding], text, len,
									 encoding);
		else
			ascii_only(cv, text, len, encoding);
	}
	*outlen = cv->out.len;
	return cv->out.data;
}
