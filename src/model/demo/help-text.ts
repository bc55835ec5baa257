import { namedCallExample, type OfferedSchemas } from './named-call.ts';

const examples: Array<{ needs: string[]; text: string }> = [
  { needs: ['search_books'], text: 'Find books about birds.' },
  { needs: ['get_order_status'], text: "What's the status of order 1043?" },
  { needs: ['cancel_order'], text: 'Please cancel my order 1044.' },
  { needs: ['get_order_status', 'cancel_order'], text: "What's the status of 1043? And cancel 1044." },
  { needs: ['add_to_cart'], text: 'Add b-1 to my cart.' },
  { needs: ['get_shopping_list'], text: "What's on my shopping list?" },
  { needs: ['add_to_shopping_list'], text: "We're out of eggs, put a dozen on the list." },
  { needs: ['add_to_shopping_list'], text: 'Actually, make that six.' },
];

/** The reply to anything the demo model does not recognise. */
export function helpText(offered: ReadonlySet<string>, schemas: OfferedSchemas = new Map()): string {
  const covered = new Set(examples.flatMap((example) => example.needs));
  // Tools of one's own have no fixed phrase: they are called by name.
  const named = [...offered]
    .filter((tool) => !covered.has(tool))
    .map((tool) => ({ needs: [tool], text: namedCallExample(tool, schemas.get(tool)) }));
  const usable = [...examples, ...named].filter((example) =>
    example.needs.every((tool) => offered.has(tool)),
  );
  const lead =
    "I am countersign's offline demo model, not a real language model: I only understand a few fixed kinds of request.";
  if (usable.length === 0) {
    return `${lead} None of them fit the tools offered here. Set COUNTERSIGN_MODEL to use a real model.`;
  }
  return [`${lead} Try one of these:`, ...usable.map((example) => `- ${example.text}`)].join('\n');
}
