/* Member of libmulti.a, pulled in by multi_main.o; it pulls in multi_base.o in turn. */
int multi_base(void);
int multi_offset(int v) { return v + multi_base(); }
