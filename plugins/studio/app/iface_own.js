// -- studio42b: the options a field's interface and display declare (interfaces.js lists them),
// as stored in the field's options under `interfaceOptions` and `displayOptions`. A module of its
// own so that the interface modules read them without importing interfaces.js (no import cycle).

const declared = (field, kind) => ((field.options && field.options[kind]) || {});

/** The options `field`'s interface declares, as stored. */
export const interfaceOptions = (field) => declared(field, "interfaceOptions");

/** The options `field`'s display declares, as stored. */
export const displayOptions = (field) => declared(field, "displayOptions");
