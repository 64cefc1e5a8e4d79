/* Linker test kernel: calls a function that exists nowhere. */
extern int reloc_no_such_function_anywhere(int);
int reloc_unresolved_call(int x) { return reloc_no_such_function_anywhere(x) + 1; }
