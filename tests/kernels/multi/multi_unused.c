/* Member of libmulti.a that no kernel needs: pulled in, it would fail the link (nothing
 * defines multi_no_such_symbol), so a set that loads proves members are pulled only by need. */
int multi_no_such_symbol(void);
int multi_unused(void) { return multi_no_such_symbol(); }
