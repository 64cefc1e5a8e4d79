/* Linker test kernel: a constructor (.init_array), which the host linker runs at load. It calls
 * out, so that no compiler can evaluate it at compile time and drop .init_array. */
extern int reloc_ctor_hook(void);
static int reloc_ctor_value;
__attribute__((constructor)) static void reloc_ctor_init(void) { reloc_ctor_value = reloc_ctor_hook(); }
int reloc_ctor_get(void) { return reloc_ctor_value; }
