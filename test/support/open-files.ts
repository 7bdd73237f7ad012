import { readdirSync, readlinkSync } from 'node:fs';

/** How many of this process's open file descriptors are the file at `path` (Linux's /proc/self/fd). */
export function openDescriptors(path: string): number {
  return readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`) === path;
    } catch {
      return false;
    }
  }).length;
}
