/*-------------------------------------------------------------------------
 *
 * hooks.h
 *	  The hooks that feed the statement kind (hooks.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGSS_NG_HOOKS_H
#define PGSS_NG_HOOKS_H

extern void pgss_ng_hooks_init(void);

#endif							/* PGSS_NG_HOOKS_H */
