/* Member of libmulti.a, needed only by another member (multi_offset.o). */
int multi_base(void) { return 100; }
