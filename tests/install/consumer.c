/* Consumer of libsk: built by tests/install/run.sh through pkg-config and find_package(sk), and
 * by tests/install/subproject.sh with libsk as a subproject; checks the library loads, matches
 * its header, and reports errors. */
#include <sk.h>

#include <stdio.h>
#include <string.h>

#define EXPECT(cond)                                                              \
  do {                                                                            \
    if (!(cond)) {                                                                \
      fprintf(stderr, "consumer: %s:%d: %s failed\n", __FILE__, __LINE__, #cond); \
      return 1;                                                                   \
    }                                                                             \
  } while (0)

int main(void) {
  sk_device *dev = NULL;
  sk_device *untouched = (sk_device *)&dev; /* any non-NULL sentinel */
  sk_status st;

  printf("libsk version %u (header %d)\n", (unsigned)sk_version(), SK_VERSION_NUMBER);
  EXPECT(sk_version() == SK_VERSION_NUMBER);
  EXPECT(strcmp(sk_status_name(SK_OK), "SK_OK") == 0);

  st = sk_device_open("host", &dev);
  if (st != SK_OK) fprintf(stderr, "consumer: sk_device_open: %s\n", sk_last_error());
  EXPECT(st == SK_OK && dev != NULL);

  /* A failing call: a status, a message naming the culprit, the out-parameter untouched. */
  st = sk_device_open("no-such-backend", &untouched);
  EXPECT(st == SK_ERR_INVALID_ARGUMENT);
  EXPECT(untouched == (sk_device *)&dev);
  EXPECT(strstr(sk_last_error(), "no-such-backend") != NULL);
  printf("expected failure: %s: %s\n", sk_status_name(st), sk_last_error());

  sk_device_close(dev);
  sk_device_close(NULL); /* destroy functions accept NULL */
  return 0;
}
