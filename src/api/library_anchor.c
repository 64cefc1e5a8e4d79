/* libsk.so is built from the sk_internal archive (linked whole); this file only gives the
 * shared-library target a source of its own. */
typedef int sk_library_anchor_unused;
