/* A second strong definition of multi_helper.c's multi_scale: the set is refused. */
int multi_scale(int v) { return 5 * v; }
