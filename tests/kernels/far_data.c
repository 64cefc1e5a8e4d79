/* Default PIE code reading and writing external variables that lie far apart, so that no
 * placement reaches them all with 32-bit displacements: the loader rewrites the references it
 * cannot reach (x86-64: a stub through an absolute address; AArch64: an ADRP veneer). The test
 * executable also links this file statically, the reference its results must equal. */
extern int far_data_a;
extern int far_data_b;
extern double far_data_d;
extern long far_data_counts[4];
extern unsigned char far_data_bytes[8];

int far_data_step(int x) {
  far_data_a += x;
  far_data_b = far_data_b * 3 + far_data_a;
  far_data_d = far_data_d * 0.5 + x;
  far_data_counts[x & 3]++;
  far_data_bytes[x & 7] ^= (unsigned char)(x * 37);
  if (far_data_b > 100) far_data_counts[0] |= 0x100;
  return far_data_a - far_data_b + (far_data_d > 3.0);
}

int *far_data_b_address(void) { return &far_data_b; }

double far_data_read_d(void) { return far_data_d; }
