/**
 * The data-type category, as the listing's schemas write it.
 *
 * A {@link Type} is what a value is decoded at and written from. Named
 * types (records and enums) are declared once in an {@link Env} and referred
 * to by identity, so recursive types are finite. {@link typeFromSchema}
 * reads the schemas `flow tools` lists (core's `schema_of`), keyword for
 * keyword: a port of the Python toolkit's `types.py`.
 */
/** The scalars' names, as Flow writes them. */
export type PrimName = "Int" | "Decimal" | "Text" | "Bool" | "Bytes" | "Instant" | "Duration" | "json.Value" | "host token" | "Never";
/** A data type. */
export type Type = {
    readonly k: "prim";
    readonly name: PrimName;
} | {
    readonly k: "list";
    readonly item: Type;
} | {
    readonly k: "set";
    readonly item: Type;
} | {
    readonly k: "tuple";
    readonly items: readonly Type[];
} | {
    readonly k: "dict";
    readonly key: Type;
    readonly value: Type;
} | {
    readonly k: "option";
    readonly inner: Type;
} | {
    readonly k: "result";
    readonly ok: Type;
    readonly err: Type;
} | {
    readonly k: "named";
    readonly identity: string;
    readonly args: readonly Type[];
} | {
    readonly k: "param";
    readonly name: string;
};
/** `Int`. */
export declare const INT: Type;
/** `Decimal`. */
export declare const DECIMAL: Type;
/** `Text`. */
export declare const TEXT: Type;
/** `Bool`. */
export declare const BOOL: Type;
/** `Bytes`. */
export declare const BYTES: Type;
/** `Instant`. */
export declare const INSTANT: Type;
/** `Duration`. */
export declare const DURATION: Type;
/** `json.Value`. */
export declare const JSON_VALUE: Type;
/** A host token. */
export declare const HOST_TOKEN: Type;
/** `Never`. */
export declare const NEVER: Type;
/** `List<T>`. */
export declare const listOf: (item: Type) => Type;
/** `Set<T>`. */
export declare const setOf: (item: Type) => Type;
/** A tuple. */
export declare const tupleOf: (...items: Type[]) => Type;
/** `Dict<K, V>`. */
export declare const dictOf: (key: Type, value: Type) => Type;
/** `Option<T>`. */
export declare const optionOf: (inner: Type) => Type;
/** `Result<T, E>`. */
export declare const resultOf: (ok: Type, err: Type) => Type;
/** A declared type by identity, with its type arguments. */
export declare const named: (identity: string, ...args: Type[]) => Type;
/** Fields in declaration order: name and type (an Option field's type is `Option<T>`). */
export type Fields = readonly (readonly [string, Type])[];
/** A record declaration. */
export interface RecordDecl {
    /** Always `"record"`. */
    readonly k: "record";
    /** Its identity. */
    readonly identity: string;
    /** Its type parameters. */
    readonly params: readonly string[];
    /** Its fields. */
    readonly fields: Fields;
}
/** One constructor: no payload (`null`), one value (a type), or named fields. */
export interface Constructor {
    /** Its name, the `$tag` of its values. */
    readonly name: string;
    /** Its payload. */
    readonly payload: null | {
        readonly value: Type;
    } | {
        readonly fields: Fields;
    };
}
/** An enum declaration. */
export interface EnumDecl {
    /** Always `"enum"`. */
    readonly k: "enum";
    /** Its identity. */
    readonly identity: string;
    /** Its type parameters. */
    readonly params: readonly string[];
    /** Its constructors in declaration order. */
    readonly constructors: readonly Constructor[];
}
/** A declaration. */
export type Decl = RecordDecl | EnumDecl;
/** Declarations by identity. */
export type Env = Map<string, Decl>;
/** A schema that is not one the listing's generator writes. */
export declare class SchemaError extends Error {
    name: string;
}
/** The type a schema written where a type is used describes. */
export declare function readType(schema: unknown): Type;
/** A `$defs` entry: a record's object or an enum's `oneOf`. */
export declare function readDecl(identity: string, s: unknown): Decl;
/**
 * The type a root schema describes, and the declarations under its
 * `$defs`. The schema is JSON as `JSON.parse` (or the toolkit's own
 * reader, {@link parseJsonValue}) makes it: key order is field order.
 */
export declare function typeFromSchema(schema: unknown): [Type, Env];
/** The type as Flow writes it in a message. */
export declare function written(ty: Type): string;
/** `ty` with the type parameters of `scope` substituted. */
export declare function close(ty: Type, scope: ReadonlyMap<string, Type>): Type;
