/*-------------------------------------------------------------------------
 *
 * qtext.c
 *	  Query texts in the statement kind's DSA area.
 *
 * Each text is one DSA chunk holding the bytes and a terminating NUL,
 * allocated with DSA_ALLOC_NO_OOM: when shared memory runs out the entry
 * is kept without its text (query shows NULL).  Reading a text never
 * touches disk.
 *
 * Locking: none of its own; see qtext.h.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "qtext.h"

/*
 * pgss_ng_qtext_store
 *		Copy len bytes of text into shared memory.  Returns the text's
 *		pointer, or InvalidDsaPointer if no shared memory could be had.
 *		Never raises an ERROR.
 */
dsa_pointer
pgss_ng_qtext_store(dsa_area *area, const char *text, int len)
{
	dsa_pointer p;
	char	   *dst;

	p = dsa_allocate_extended(area, (size_t) len + 1, DSA_ALLOC_NO_OOM);
	if (!DsaPointerIsValid(p))
		return InvalidDsaPointer;

	dst = dsa_get_address(area, p);
	memcpy(dst, text, len);
	dst[len] = '\0';
	return p;
}

/*
 * pgss_ng_qtext_copy
 *		palloc a NUL-terminated copy of a stored text of len bytes in
 *		CurrentMemoryContext; NULL if there is no text.
 */
char *
pgss_ng_qtext_copy(dsa_area *area, dsa_pointer text, int len)
{
	char	   *copy;

	if (!DsaPointerIsValid(text))
		return NULL;
	copy = palloc(len + 1);
	memcpy(copy, dsa_get_address(area, text), len + 1);
	return copy;
}

/*
 * pgss_ng_qtext_release
 *		Free a stored text; InvalidDsaPointer is accepted and ignored.
 */
void
pgss_ng_qtext_release(dsa_area *area, dsa_pointer text)
{
	if (DsaPointerIsValid(text))
		dsa_free(area, text);
}
