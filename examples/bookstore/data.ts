/** The bookstore's starting data. Tools copy it into the store on first use and change it there. */
export interface Book {
  id: string;
  title: string;
  author: string;
  price: number;
  topics: string[];
}

export type OrderStatus = 'Processing' | 'Shipped' | 'Delivered' | 'Cancelled';

export interface Order {
  id: number;
  customer: string;
  status: OrderStatus;
  bookIds: string[];
}

export const books: Book[] = [
  {
    id: 'b-1',
    title: 'The Pragmatic Programmer',
    author: 'Hunt & Thomas',
    price: 20.0,
    topics: ['programming', 'craft'],
  },
  {
    id: 'b-2',
    title: 'Refactoring',
    author: 'Martin Fowler',
    price: 15.0,
    topics: ['programming', 'design'],
  },
  {
    id: 'b-3',
    title: 'Designing Data-Intensive Applications',
    author: 'Martin Kleppmann',
    price: 42.5,
    topics: ['databases', 'distributed systems'],
  },
  {
    id: 'b-4',
    title: 'Crème Brûlée at Home',
    author: 'Léa Dupont',
    price: 12.9,
    topics: ['cooking', 'dessert'],
  },
  {
    id: 'b-5',
    title: 'The Art of PostgreSQL',
    author: 'Dimitri Fontaine',
    price: 39.0,
    topics: ['databases', 'sql'],
  },
];

export const initialOrders: Order[] = [
  { id: 1040, customer: 'c-100', status: 'Delivered', bookIds: ['b-1', 'b-2'] },
  { id: 1043, customer: 'c-100', status: 'Shipped', bookIds: ['b-3'] },
  { id: 1044, customer: 'c-100', status: 'Processing', bookIds: ['b-4', 'b-5'] },
  { id: 1050, customer: 'c-200', status: 'Processing', bookIds: ['b-3'] },
  // Larger orders, so the routing by amount shows: a manager cancels 1061 (81.50), two
  // managers 1062 (129.40); anyone on the support team cancels 1044 (51.90).
  { id: 1061, customer: 'c-100', status: 'Processing', bookIds: ['b-3', 'b-5'] },
  { id: 1062, customer: 'c-100', status: 'Processing', bookIds: ['b-1', 'b-2', 'b-3', 'b-4', 'b-5'] },
];

export function orderTotal(order: Order): number {
  return order.bookIds.reduce((sum, id) => sum + (books.find((book) => book.id === id)?.price ?? 0), 0);
}

export function money(amount: number): string {
  return amount.toFixed(2);
}
