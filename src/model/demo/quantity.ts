const numberWords: Record<string, number> = {
  one: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  eleven: 11,
  twelve: 12,
  fifteen: 15,
  twenty: 20,
  thirty: 30,
  fifty: 50,
  hundred: 100,
};

const units: Record<string, string> = {
  g: 'g',
  gram: 'g',
  grams: 'g',
  kg: 'kg',
  kilo: 'kg',
  kilos: 'kg',
  ml: 'ml',
  l: 'l',
  litre: 'l',
  litres: 'l',
  liter: 'l',
  liters: 'l',
  lb: 'lb',
  lbs: 'lb',
  pound: 'lb',
  pounds: 'lb',
  oz: 'oz',
};

const word = Object.keys(numberWords).join('|');
const unit = Object.keys(units)
  .sort((a, b) => b.length - a.length)
  .join('|');

/** Matches one quantity phrase; shared with the request parser so both agree on what counts. */
export const quantitySource = `(?:\\d+(?:\\.\\d+)?\\s*(?:${unit})\\b|half\\s+a\\s+dozen|(?:a|\\d+|${word})\\s+dozen|a\\s+couple(?:\\s+of)?|\\d+|(?:${word})\\b)`;

/**
 * The first quantity in a phrase, as the kitchen app writes it: "12", "6", "500 g".
 * Returns undefined when the phrase names no quantity.
 */
export function parseQuantity(text: string): string | undefined {
  const match = new RegExp(`\\b${quantitySource}`, 'i').exec(text);
  if (!match) return undefined;
  const phrase = match[0].toLowerCase().replace(/\s+/g, ' ');
  const measured = /^(\d+(?:\.\d+)?) ?([a-z]+)$/.exec(phrase);
  if (measured?.[1] && measured[2]) return `${measured[1]} ${units[measured[2]] ?? measured[2]}`;
  if (phrase === 'half a dozen') return '6';
  if (phrase.startsWith('a couple')) return '2';
  const dozen = /^(\S+) dozen$/.exec(phrase);
  if (dozen?.[1]) return String(12 * countOf(dozen[1]));
  return String(countOf(phrase));
}

function countOf(token: string): number {
  if (token === 'a') return 1;
  return numberWords[token] ?? Number(token);
}
