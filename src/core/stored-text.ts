/**
 * Text as a database column holds it. UTF-8 has no encoding for a lone surrogate, which
 * JSON.parse accepts (from a model's tool call, a request body), so SQLite and PostgreSQL
 * store U+FFFD in its place. Whatever is compared with stored text, or hashed to be verified
 * against it later (an audit link), takes this form first; the memory store keeps it too, so
 * every backend reads back the same. Well-formed text is returned as it is.
 */
export function storedText<T extends string | null>(text: T): T {
  return (text === null || text.isWellFormed() ? text : text.toWellFormed()) as T;
}
