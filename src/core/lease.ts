/** A session's lease as stored: who runs it, until when (epoch ms). */
export interface LeaseInfo {
  owner: string | null;
  untilMs: number;
}
