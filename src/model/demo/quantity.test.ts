import { describe, expect, it } from 'vitest';
import { parseQuantity } from './quantity.ts';

describe('parseQuantity', () => {
  it.each([
    ['a dozen', '12'],
    ['put a dozen on the list', '12'],
    ['half a dozen', '6'],
    ['two dozen', '24'],
    ['six', '6'],
    ['make that 3', '3'],
    ['500 g of flour', '500 g'],
    ['500g of flour', '500 g'],
    ['2 kilos of potatoes', '2 kg'],
    ['1.5 litres of milk', '1.5 l'],
    ['a couple of lemons', '2'],
  ])('%s → %s', (text, quantity) => {
    expect(parseQuantity(text)).toBe(quantity);
  });

  it('finds none in words that only contain a number word', () => {
    expect(parseQuantity('often someone')).toBeUndefined();
    expect(parseQuantity('5 large eggs')).toBe('5');
  });
});
