import { html } from './html.ts';

/** Offered when rejecting; the model reads the reason, so each says what to do next. */
export const suggestedReasons = [
  'We need to talk to the customer first; support will get in touch. Do not retry.',
  'This is not what the customer asked for. Ask them what they want instead.',
  'Our policy does not allow this. Explain that to the customer and do not retry.',
  'This order can no longer be changed. Do not retry.',
];

export const reasonList = html`<datalist id="suggested-reasons">
  ${suggestedReasons.map((reason) => html`<option value="${reason}"></option>`)}
</datalist>`;
