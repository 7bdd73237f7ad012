/**
 * Counts the turns the event loop takes from now until `stop`: a callback of the check phase
 * (setImmediate) that schedules itself again, so each turn counts once. Work that never lets the
 * event loop turn leaves the count where it was.
 */
export function countTurns(): { readonly turns: () => number; stop(): number } {
  let turns = 0;
  let counting = true;
  const tick = (): void => {
    turns += 1;
    if (counting) setImmediate(tick);
  };
  setImmediate(tick);
  return {
    turns: () => turns,
    stop() {
      counting = false;
      return turns;
    },
  };
}
