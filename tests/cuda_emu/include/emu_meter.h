/*
 * emu_meter.h: the emulated device's cost meter (tests/cuda_emu/src/meter.cc), for test
 * programs linked against the emulator (never part of libtandem). Counts
 * from tdm_emu_meter_start on.
 */
#ifndef TDM_EMU_METER_H
#define TDM_EMU_METER_H

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tdm_emu_meter {
  /* warp-level global memory accesses of instrumented kernels */
  unsigned long long load_requests, store_requests; /* warp-level accesses */
  unsigned long long load_sectors, store_sectors;   /* distinct 32-byte sectors of each, summed */
  unsigned long long load_lines, store_lines;       /* distinct 128-byte lines of each, summed */
  unsigned long long accesses;                      /* thread-level loads and stores counted */
  /* what the CUB stand-ins, copies within the device and memsets model */
  unsigned long long model_read_sectors, model_write_sectors;
  unsigned long long sectors; /* all of the sectors above */
  unsigned long long atomics, max_same_address_atomics; /* the latter: the most on one address in one launch */
  unsigned long long kernels, cub_calls, launches;      /* launches = kernels + CUB device-wide calls */
  unsigned long long host_syncs;                        /* calls that wait for the device */
  unsigned long long h2d_bytes, d2h_bytes, allocs;
  unsigned long long ptr_queries; /* cudaPointerGetAttributes, cuPointerGetAttribute(s) calls */
  /* warp-level __shared__ accesses of instrumented kernels: wavefronts (the
   * most distinct words in one bank) and bank-conflict replays (wavefronts
   * beyond the access's width: distinct words / 32, rounded up) */
  unsigned long long shared_requests, shared_wavefronts, bank_conflict_replays;
} tdm_emu_meter;

/* Zeroes the counts and turns the meter on. */
void tdm_emu_meter_start(void);
/* Turns it off (the counts stay readable). */
void tdm_emu_meter_stop(void);
/* Runs what is still queued (counted, but no host wait of the program's),
 * then reads the counts. */
void tdm_emu_meter_read(tdm_emu_meter *m);

#ifdef __cplusplus
}
#endif

#endif
