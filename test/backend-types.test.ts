import { resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '..');
const src = `${resolve(root, 'src')}/`;
// Named declarations a backend author writes against; methods and literals are walked, not listed.
const declaredTypes =
  ts.SymbolFlags.Interface | ts.SymbolFlags.TypeAlias | ts.SymbolFlags.Class | ts.SymbolFlags.Enum;

/**
 * The named types of countersign's own source that a backend meets while implementing
 * `roots`: every interface or alias reachable through members, parameters, results, type
 * arguments, unions and base interfaces. Types of the standard library or of other
 * packages are walked through (Promise<X> reaches X) but not listed.
 */
function reachableNames(checker: ts.TypeChecker, roots: readonly ts.Type[]): Map<string, string> {
  const found = new Map<string, string>();
  const seen = new Set<ts.Type>();
  const ours = (symbol: ts.Symbol | undefined): boolean =>
    symbol?.declarations?.some((declaration) => declaration.getSourceFile().fileName.startsWith(src)) ??
    false;

  const visitSignature = (signature: ts.Signature, where: string): void => {
    for (const parameter of signature.parameters)
      visit(checker.getTypeOfSymbol(parameter), `${where}(${parameter.name})`);
    visit(checker.getReturnTypeOfSignature(signature), `${where}()`);
  };

  function visit(type: ts.Type, where: string): void {
    if (seen.has(type)) return;
    seen.add(type);
    const named = type.aliasSymbol ?? (type.flags & ts.TypeFlags.Object ? type.getSymbol() : undefined);
    if (named !== undefined && named.flags & declaredTypes && ours(named) && !found.has(named.name))
      found.set(named.name, where);
    for (const argument of type.aliasTypeArguments ?? []) visit(argument, where);
    if (type.isUnionOrIntersection()) for (const member of type.types) visit(member, where);
    if (!(type.flags & ts.TypeFlags.Object)) return;
    const object = type as ts.ObjectType;
    if (object.objectFlags & ts.ObjectFlags.Reference)
      for (const argument of checker.getTypeArguments(type as ts.TypeReference)) visit(argument, where);
    // Only our own types are walked member by member; Promise's or Array's members are not a backend's concern.
    if (!ours(type.getSymbol()) && !ours(type.aliasSymbol)) return;
    if (type.isClassOrInterface()) for (const base of checker.getBaseTypes(type)) visit(base, where);
    for (const property of checker.getPropertiesOfType(type)) {
      const propertyType = checker.getTypeOfSymbol(property);
      visit(propertyType, `${where}.${property.name}`);
      for (const signature of propertyType.getCallSignatures())
        visitSignature(signature, `${where}.${property.name}`);
    }
    for (const signature of type.getCallSignatures()) visitSignature(signature, where);
  }

  for (const type of roots) visit(type, checker.typeToString(type));
  return found;
}

describe('the types a backend implements', () => {
  it('countersign exports every named type reachable from Store and CheckpointStore', () => {
    const entry = resolve(root, 'src/index.ts');
    const { config } = ts.readConfigFile(resolve(root, 'tsconfig.json'), ts.sys.readFile);
    const { options } = ts.parseJsonConfigFileContent(config, ts.sys, root);
    const program = ts.createProgram([entry], { ...options, noEmit: true });
    const checker = program.getTypeChecker();
    const file = program.getSourceFile(entry);
    const module = file && checker.getSymbolAtLocation(file);
    if (module === undefined) throw new Error('src/index.ts has no module symbol');
    const exports = new Map(checker.getExportsOfModule(module).map((symbol) => [symbol.name, symbol]));
    const rootType = (name: string): ts.Type => {
      const symbol = exports.get(name);
      if (symbol === undefined) throw new Error(`countersign does not export ${name}`);
      return checker.getDeclaredTypeOfSymbol(checker.getAliasedSymbol(symbol));
    };

    const reachable = reachableNames(checker, [rootType('Store'), rootType('CheckpointStore')]);
    // A sanity check on the walk itself: these sit a few levels down.
    expect([...reachable.keys()]).toEqual(
      expect.arrayContaining(['StepCommit', 'DecideResult', 'LeaseRequest', 'ApprovalRequest', 'JsonValue']),
    );
    const missing = [...reachable]
      .filter(([name]) => !exports.has(name))
      .map(([name, where]) => `${name} (at ${where})`);
    expect(missing).toEqual([]);
  }, 60_000);
});
