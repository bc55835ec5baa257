// What a host application runs, after its own sign-in has decided who the customer is:
// a link into countersign's chat that signs that customer in for an hour.
//
//   COUNTERSIGN_CHAT_SECRET=… node examples/chat-token/mint.ts c-100 http://127.0.0.1:8787
import { SignJWT } from 'jose';

export async function chatLink(chatOrigin: string, customerId: string, secret: string): Promise<string> {
  const token = await new SignJWT()
    .setProtectedHeader({ alg: 'HS256' })
    .setSubject(customerId) // the customer id your tools authorize against (ctx.principal)
    .setIssuedAt()
    .setExpirationTime('1h') // the chat sign-in ends here (countersign caps it at 12 h)
    .sign(new TextEncoder().encode(secret)); // the same value as COUNTERSIGN_CHAT_SECRET
  return `${chatOrigin}/chat?token=${token}`;
}

if (import.meta.main) {
  const [customerId = 'c-100', origin = 'http://127.0.0.1:8787'] = process.argv.slice(2);
  const secret = process.env.COUNTERSIGN_CHAT_SECRET;
  if (!secret) {
    console.error('Set COUNTERSIGN_CHAT_SECRET to the secret the countersign server was started with.');
    process.exit(2);
  }
  console.log(await chatLink(origin, customerId, secret));
}
