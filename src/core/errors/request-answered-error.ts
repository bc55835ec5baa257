import { CountersignError } from './countersign-error.ts';

/** A workflow request that already has its answer; carries who answered first and when. */
export class RequestAnsweredError extends CountersignError {
  override readonly name = 'RequestAnsweredError';
  readonly answeredBy: string;
  readonly answeredAt: string;
  constructor(run: string, requestId: string, answeredBy: string, answeredAt: string) {
    super(
      'ALREADY_DECIDED',
      `Request ${requestId} of run ${run} was already answered by ${answeredBy} at ${answeredAt}.`,
      {
        hint: 'Nothing was changed; the first answer stands.',
      },
    );
    this.answeredBy = answeredBy;
    this.answeredAt = answeredAt;
  }
}
